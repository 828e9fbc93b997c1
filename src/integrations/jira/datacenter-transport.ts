import { type Client, createClient } from "jira.js/core";
import {
  DEVELOPMENT_DETAIL_PATH,
  type DevelopmentDetail,
  developmentQuery,
  type JiraTransport,
  type RawCommentPage,
  type RawIssue,
} from "./jira-transport.ts";

/**
 * Jira Data Center's REST v2. jira.js 6 generates only Cloud's v3 endpoints (its Version2Client is gone),
 * but its transport speaks any path: the same client (a personal access token as a bearer token, typed
 * errors, Retry-After read from a 429) sends these v2 requests. Rich text is wiki markup both ways; users
 * are named by username.
 */
export class DataCenterTransport implements JiraTransport {
  readonly flavour = "datacenter" as const;
  private readonly client: Client;

  constructor(opts: { baseUrl: string; token: string }) {
    this.client = createClient({ host: opts.baseUrl, auth: { type: "bearer", token: opts.token } });
  }

  getIssue(issueIdOrKey: string): Promise<RawIssue> {
    return this.client.sendRequest<RawIssue>({
      url: `/rest/api/2/issue/${encodeURIComponent(issueIdOrKey)}`,
      method: "GET",
      searchParams: { fields: "summary,description,project,status" },
    });
  }

  async getRemoteLinks(issueIdOrKey: string) {
    const links = await this.client.sendRequest<Array<{ object?: { url?: string } }>>({
      url: `/rest/api/2/issue/${encodeURIComponent(issueIdOrKey)}/remotelink`,
      method: "GET",
    });
    return Array.isArray(links) ? links : [];
  }

  getDevelopmentPullRequests(issueId: string): Promise<DevelopmentDetail> {
    return this.client.sendRequest<DevelopmentDetail>({
      url: DEVELOPMENT_DETAIL_PATH,
      method: "GET",
      searchParams: developmentQuery(issueId),
    });
  }

  async addComment(issueIdOrKey: string, body: unknown, properties: Array<{ key: string; value: unknown }>) {
    const created = await this.client.sendRequest<{ id: string | number }>({
      url: `/rest/api/2/issue/${encodeURIComponent(issueIdOrKey)}/comment`,
      method: "POST",
      body: { body, properties },
    });
    return { id: String(created.id) };
  }

  async updateComment(issueIdOrKey: string, commentId: string, body: unknown): Promise<void> {
    await this.client.sendRequest({
      url: `/rest/api/2/issue/${encodeURIComponent(issueIdOrKey)}/comment/${encodeURIComponent(commentId)}`,
      method: "PUT",
      body: { body },
    });
  }

  listComments(issueIdOrKey: string, startAt: number, maxResults: number): Promise<RawCommentPage> {
    return this.client.sendRequest<RawCommentPage>({
      url: `/rest/api/2/issue/${encodeURIComponent(issueIdOrKey)}/comment`,
      method: "GET",
      searchParams: { startAt, maxResults, orderBy: "-created", expand: "properties" },
    });
  }

  async getTransitions(issueIdOrKey: string) {
    const answer = await this.client.sendRequest<{
      transitions?: Array<{ id?: string; name?: string; to?: { name?: string } }>;
    }>({ url: `/rest/api/2/issue/${encodeURIComponent(issueIdOrKey)}/transitions`, method: "GET" });
    return answer.transitions ?? [];
  }

  async doTransition(issueIdOrKey: string, transitionId: string): Promise<void> {
    await this.client.sendRequest({
      url: `/rest/api/2/issue/${encodeURIComponent(issueIdOrKey)}/transitions`,
      method: "POST",
      body: { transition: { id: transitionId } },
    });
  }

  async createOrUpdateRemoteLink(
    issueIdOrKey: string,
    link: { globalId: string; url: string; title: string; summary: string },
  ): Promise<void> {
    await this.client.sendRequest({
      url: `/rest/api/2/issue/${encodeURIComponent(issueIdOrKey)}/remotelink`,
      method: "POST",
      body: {
        globalId: link.globalId,
        application: { type: "com.github", name: "GitHub" },
        relationship: "pull request",
        object: { url: link.url, title: link.title, summary: link.summary },
      },
    });
  }

  async usersWithPermission(userId: string, projectKey: string, permission: string) {
    // `username` is a search (a prefix of names and e-mail addresses): JiraApi keeps only the exact name.
    const users = await this.client.sendRequest<Array<{ name?: string }>>({
      url: "/rest/api/2/user/permission/search",
      method: "GET",
      searchParams: { username: userId, projectKey, permissions: permission, maxResults: 50 },
    });
    return Array.isArray(users) ? users : [];
  }
}
