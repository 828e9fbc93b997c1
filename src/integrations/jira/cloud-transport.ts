import {
  addComment,
  createOrUpdateRemoteIssueLink,
  doTransition,
  findUsersWithAllPermissions,
  getComments,
  getIssue,
  getRemoteIssueLinks,
  getTransitions,
  updateComment,
} from "jira.js/cloud";
import { type Client, createClient, type SchemaMismatchBehavior } from "jira.js/core";
import {
  DEVELOPMENT_DETAIL_PATH,
  type DevelopmentDetail,
  developmentQuery,
  type JiraTransport,
  type RawCommentPage,
  type RawIssue,
} from "./jira-transport.ts";

/**
 * Jira Cloud's REST v3 through jira.js's endpoint functions (one request each, no retries of its own: the
 * outbox and the inbox own retries). Rich text is an ADF document both ways. jira.js checks every answer
 * against its schema; a mismatch is logged (`onSchemaMismatch`), never a failure in production.
 */
export class CloudTransport implements JiraTransport {
  readonly flavour = "cloud" as const;
  private readonly client: Client;

  constructor(opts: {
    baseUrl: string;
    email: string;
    apiToken: string;
    onSchemaMismatch: SchemaMismatchBehavior;
  }) {
    this.client = createClient({
      host: opts.baseUrl,
      auth: { type: "basic", email: opts.email, apiToken: opts.apiToken },
      onSchemaMismatch: opts.onSchemaMismatch,
    });
  }

  async getIssue(issueIdOrKey: string): Promise<RawIssue> {
    const issue = await getIssue(this.client, {
      issueIdOrKey,
      fields: ["summary", "description", "project", "status"],
    });
    return issue as unknown as RawIssue;
  }

  async getRemoteLinks(issueIdOrKey: string) {
    const links = await getRemoteIssueLinks(this.client, { issueIdOrKey });
    return (Array.isArray(links) ? links : [links]) as Array<{ object?: { url?: string } }>;
  }

  getDevelopmentPullRequests(issueId: string): Promise<DevelopmentDetail> {
    return this.client.sendRequest<DevelopmentDetail>({
      url: DEVELOPMENT_DETAIL_PATH,
      method: "GET",
      searchParams: developmentQuery(issueId),
    });
  }

  async addComment(issueIdOrKey: string, body: unknown, properties: Array<{ key: string; value: unknown }>) {
    const created = await addComment(this.client, {
      issueIdOrKey,
      body: body as { type: "doc"; version: number; content: Array<Record<string, unknown>> },
      properties,
    });
    return { id: String(created.id) };
  }

  async updateComment(issueIdOrKey: string, commentId: string, body: unknown): Promise<void> {
    await updateComment(this.client, {
      issueIdOrKey,
      id: commentId,
      // Editing the card should not notify every watcher each time the run moves on.
      notifyUsers: false,
      body: { body: body as { type: "doc"; version: number; content: Array<Record<string, unknown>> } },
    });
  }

  async listComments(issueIdOrKey: string, startAt: number, maxResults: number): Promise<RawCommentPage> {
    const page = await getComments(this.client, {
      issueIdOrKey,
      startAt,
      maxResults,
      orderBy: "-created",
      expand: "properties",
    });
    return page as unknown as RawCommentPage;
  }

  async getTransitions(issueIdOrKey: string) {
    const { transitions } = await getTransitions(this.client, { issueIdOrKey });
    return (transitions ?? []) as Array<{ id?: string; name?: string; to?: { name?: string } }>;
  }

  async doTransition(issueIdOrKey: string, transitionId: string): Promise<void> {
    await doTransition(this.client, { issueIdOrKey, transition: { id: transitionId } });
  }

  async createOrUpdateRemoteLink(
    issueIdOrKey: string,
    link: { globalId: string; url: string; title: string; summary: string },
  ): Promise<void> {
    await createOrUpdateRemoteIssueLink(this.client, {
      issueIdOrKey,
      globalId: link.globalId,
      application: { type: "com.github", name: "GitHub" },
      relationship: "pull request",
      object: { url: link.url, title: link.title, summary: link.summary },
    });
  }

  async usersWithPermission(userId: string, projectKey: string, permission: string) {
    const users = await findUsersWithAllPermissions(this.client, {
      accountId: userId,
      projectKey,
      permissions: permission,
    });
    return users as Array<{ accountId?: string }>;
  }
}
