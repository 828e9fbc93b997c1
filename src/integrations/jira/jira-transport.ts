/**
 * The REST calls Dispatch makes to a Jira site, as raw as each flavour answers them: Cloud speaks REST v3
 * through jira.js (cloud-transport.ts), Data Center REST v2 through jira.js's transport with v2 paths
 * (datacenter-transport.ts). JiraApi (jira-api.ts) builds what the surface needs on top of either.
 */
export interface JiraTransport {
  readonly flavour: "cloud" | "datacenter";
  /** Only the fields Dispatch reads; `description` is ADF on Cloud, wiki markup on Data Center. */
  getIssue(issueIdOrKey: string): Promise<RawIssue>;
  getRemoteLinks(issueIdOrKey: string): Promise<Array<{ object?: { url?: string } }>>;
  /** The GitHub pull requests of the issue's development panel (`dev-status`, the same path on both). */
  getDevelopmentPullRequests(issueId: string): Promise<DevelopmentDetail>;
  /** `body` is an ADF document on Cloud, a wiki string on Data Center; the comment carries `properties`. */
  addComment(
    issueIdOrKey: string,
    body: unknown,
    properties: Array<{ key: string; value: unknown }>,
  ): Promise<{ id: string }>;
  updateComment(issueIdOrKey: string, commentId: string, body: unknown): Promise<void>;
  /** A page of the issue's comments, newest first, with their properties. */
  listComments(issueIdOrKey: string, startAt: number, maxResults: number): Promise<RawCommentPage>;
  getTransitions(
    issueIdOrKey: string,
  ): Promise<Array<{ id?: string; name?: string; to?: { name?: string } }>>;
  doTransition(issueIdOrKey: string, transitionId: string): Promise<void>;
  createOrUpdateRemoteLink(
    issueIdOrKey: string,
    link: { globalId: string; url: string; title: string; summary: string },
  ): Promise<void>;
  /** The users that `userId` names who hold `permission` on the project (Jira's user/permission/search). */
  usersWithPermission(
    userId: string,
    projectKey: string,
    permission: string,
  ): Promise<Array<{ accountId?: string; name?: string }>>;
}

export interface RawIssue {
  id: string;
  key: string;
  fields: {
    summary?: string;
    description?: unknown;
    project?: { key?: string };
    status?: { name?: string };
  };
}

export interface RawCommentPage {
  comments: Array<{
    id?: string;
    author?: { accountId?: string; name?: string };
    properties?: Array<{ key?: string; value?: unknown }>;
  }>;
  total?: number;
}

/** What the development panel's detail answers: per linked tool, its pull requests. */
export interface DevelopmentDetail {
  detail?: Array<{ pullRequests?: Array<{ url?: string }> }>;
}

/**
 * The development panel's pull requests, as Jira's own issue view reads them (`/rest/dev-status/latest`,
 * which Atlassian does not document as public REST; an answer it does not give is no links).
 */
export const DEVELOPMENT_DETAIL_PATH = "/rest/dev-status/latest/issue/detail";
export const developmentQuery = (issueId: string) => ({
  issueId,
  applicationType: "GitHub",
  dataType: "pullrequest",
});
