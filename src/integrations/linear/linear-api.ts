import { LinearError, LinearGraphQLClient } from "@linear/sdk";
import { SendError } from "../../notifier/platform.ts";

/** Each GraphQL request is given up after this long (a hung request would hold an outbox row's lease). */
const REQUEST_TIMEOUT_MS = 15_000;
/** A rate limit without a usable reset time pauses the target this long. */
const DEFAULT_RATE_LIMIT_PAUSE_MS = 60_000;

/** One step of a session's plan, as Linear shows it (linear.app/developers/agent-interaction). */
export interface PlanStep {
  content: string;
  status: "pending" | "inProgress" | "completed" | "canceled";
}

/** What an agent activity says: Linear's activity content payload. */
export type ActivityContent =
  | { type: "thought" | "response" | "error" | "elicitation"; body: string }
  | { type: "action"; action: string; parameter: string; result?: string };

/** A workflow state of a team, as the issue-start query reads them. */
interface WorkflowState {
  id: string;
  type: string;
  position: number;
}

/**
 * The GraphQL calls Dispatch makes as the Linear agent (the app's token, actor=app), through
 * `@linear/sdk`'s client: small documents of its own rather than the SDK's generated ones, so each request
 * asks only for what it uses. Errors are the SDK's LinearError; `sendErrorOf` classifies them for the outbox.
 */
export class LinearApi {
  private readonly apiUrl: string;
  private readonly accessToken: string;

  constructor(opts: { apiUrl: string; accessToken: string }) {
    this.apiUrl = opts.apiUrl;
    this.accessToken = opts.accessToken;
  }

  /** Creates an activity with the id given, so that a retried create finds the one a lost answer made. */
  async createActivity(input: {
    id: string;
    agentSessionId: string;
    content: ActivityContent;
    ephemeral?: boolean;
  }): Promise<void> {
    const data = await this.request<{ agentActivityCreate: { success: boolean } }>(
      `mutation DispatchActivityCreate($input: AgentActivityCreateInput!) {
        agentActivityCreate(input: $input) { success agentActivity { id } }
      }`,
      { input },
    );
    succeeded(data.agentActivityCreate, "agentActivityCreate");
  }

  /** Whether the activity exists (a create whose answer was lost may have made it). */
  async activityExists(id: string): Promise<boolean> {
    try {
      const data = await this.request<{ agentActivity: { id: string } | null }>(
        `query DispatchActivity($id: String!) { agentActivity(id: $id) { id } }`,
        { id },
      );
      return Boolean(data.agentActivity);
    } catch (err) {
      if (notFound(err)) return false;
      throw err;
    }
  }

  async updateSession(
    id: string,
    input: { externalUrls?: Array<{ label: string; url: string }>; plan?: PlanStep[] },
  ): Promise<void> {
    const data = await this.request<{ agentSessionUpdate: { success: boolean } }>(
      `mutation DispatchSessionUpdate($id: String!, $input: AgentSessionUpdateInput!) {
        agentSessionUpdate(id: $id, input: $input) { success }
      }`,
      { id, input },
    );
    succeeded(data.agentSessionUpdate, "agentSessionUpdate");
  }

  /**
   * What Linear asks of an agent that starts work (linear.app/developers/agent-interaction): the issue in
   * its team's first `started` state (by position) unless it is already started, completed or canceled,
   * and the agent as its delegate unless someone is.
   */
  async startIssue(issueId: string, appUserId: string): Promise<void> {
    const data = await this.request<{
      issue: {
        state: { type: string } | null;
        delegate: { id: string } | null;
        team: { states: { nodes: WorkflowState[] } };
      };
    }>(
      `query DispatchIssueStart($id: String!) {
        issue(id: $id) {
          state { id type }
          delegate { id }
          team { states(first: 100) { nodes { id type position } } }
        }
      }`,
      { id: issueId },
    );
    const { state, delegate, team } = data.issue;
    const input: { stateId?: string; delegateId?: string } = {};
    if (!state || state.type === "triage" || state.type === "backlog" || state.type === "unstarted") {
      const started = team.states.nodes
        .filter((s) => s.type === "started")
        .sort((a, b) => a.position - b.position)[0];
      if (started) input.stateId = started.id;
    }
    if (!delegate) input.delegateId = appUserId;
    if (!input.stateId && !input.delegateId) return;
    const updated = await this.request<{ issueUpdate: { success: boolean } }>(
      `mutation DispatchIssueUpdate($id: String!, $input: IssueUpdateInput!) {
        issueUpdate(id: $id, input: $input) { success }
      }`,
      { id: issueId, input },
    );
    succeeded(updated.issueUpdate, "issueUpdate");
  }

  /** The URLs linked on an issue (its attachments: GitHub pull requests and issues among them). */
  async issueLinks(issueId: string): Promise<string[]> {
    const data = await this.request<{ issue: { attachments: { nodes: Array<{ url: string }> } } }>(
      `query DispatchIssueLinks($id: String!) {
        issue(id: $id) { attachments(first: 50) { nodes { url } } }
      }`,
      { id: issueId },
    );
    return data.issue.attachments.nodes.map((n) => n.url);
  }

  /** Links a URL (the run's pull request) on the issue; Linear updates the link it has for the same URL. */
  async linkUrl(issueId: string, url: string, title: string): Promise<void> {
    const data = await this.request<{ attachmentLinkURL: { success: boolean } }>(
      `mutation DispatchLinkUrl($issueId: String!, $url: String!, $title: String) {
        attachmentLinkURL(issueId: $issueId, url: $url, title: $title) { success }
      }`,
      { issueId, url, title },
    );
    succeeded(data.attachmentLinkURL, "attachmentLinkURL");
  }

  /** The team an agent session's issue belongs to. */
  async sessionTeam(sessionId: string): Promise<string | undefined> {
    const data = await this.request<{ agentSession: { issue: { team: { id: string } } | null } | null }>(
      `query DispatchSessionTeam($id: String!) { agentSession(id: $id) { issue { team { id } } } }`,
      { id: sessionId },
    );
    return data.agentSession?.issue?.team.id;
  }

  /** The ids of a team's members, every page of them. */
  async teamMembers(teamId: string): Promise<Set<string>> {
    const members = new Set<string>();
    let after: string | null = null;
    do {
      const data: {
        team: {
          members: {
            nodes: Array<{ id: string }>;
            pageInfo: { hasNextPage: boolean; endCursor: string | null };
          };
        };
      } = await this.request(
        `query DispatchTeamMembers($id: String!, $after: String) {
          team(id: $id) { members(first: 250, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }
        }`,
        { id: teamId, after },
      );
      for (const node of data.team.members.nodes) members.add(node.id);
      after = data.team.members.pageInfo.hasNextPage ? data.team.members.pageInfo.endCursor : null;
    } while (after);
    return members;
  }

  private async request<T>(query: string, variables: Record<string, unknown>): Promise<T> {
    // A client per request: the SDK passes its options to fetch, so each request gets its own deadline.
    const client = new LinearGraphQLClient(this.apiUrl, {
      headers: { Authorization: `Bearer ${this.accessToken}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const { data } = await client.rawRequest<T, Record<string, unknown>>(query, variables);
    return data as T;
  }
}

function succeeded(payload: { success: boolean } | null | undefined, mutation: string): void {
  if (!payload?.success) throw new SendError("retryable", `Linear ${mutation} did not succeed`);
}

/** The `extensions.code` of each GraphQL error of a failed request (Linear's RATELIMITED among them). */
function errorCodes(err: LinearError): string[] {
  const raw = err.raw as { response?: { errors?: Array<{ extensions?: { code?: unknown } }> } } | undefined;
  return (raw?.response?.errors ?? []).map((e) => String(e.extensions?.code ?? ""));
}

function notFound(err: unknown): boolean {
  return err instanceof LinearError && /not found|could not find/i.test(err.message);
}

/**
 * A failed GraphQL request as the outbox retries it: Linear's RATELIMITED (an HTTP 400 whose error code
 * says so, or a 429) pauses the target until X-RateLimit-Requests-Reset; a network error, a timeout or
 * a server error is retried with backoff; a refused token or input is permanent (retrying changes nothing).
 */
export function sendErrorOf(err: unknown, now = Date.now()): SendError {
  if (err instanceof SendError) return err;
  if (!(err instanceof LinearError)) {
    return new SendError(
      "retryable",
      `Linear did not answer: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const message = `Linear: ${err.message}`;
  if (err.type === "Ratelimited" || err.status === 429 || errorCodes(err).includes("RATELIMITED")) {
    const limited = err as LinearError & { requestsResetAt?: number; retryAfter?: number };
    const headers = (err.raw as { response?: { headers?: Headers } } | undefined)?.response?.headers;
    const reset = limited.requestsResetAt ?? Number(headers?.get("x-ratelimit-requests-reset") ?? Number.NaN);
    const retryAfterS = limited.retryAfter ?? Number(headers?.get("retry-after") ?? Number.NaN);
    const waitMs = Number.isFinite(reset)
      ? reset - now
      : Number.isFinite(retryAfterS)
        ? retryAfterS * 1000
        : DEFAULT_RATE_LIMIT_PAUSE_MS;
    return new SendError("rate_limited", message, Math.max(1, Math.min(waitMs, 15 * 60_000)));
  }
  if (err.status === 401) {
    return new SendError(
      "permanent",
      `${message} (the token was refused: is LINEAR_ACCESS_TOKEN the app's token?)`,
    );
  }
  // The SDK types any other 4xx without an error type of Linear's as AuthenticationError.
  if (
    ["AuthenticationError", "InvalidInput", "Forbidden", "FeatureNotAccessible"].includes(String(err.type))
  ) {
    return new SendError("permanent", message);
  }
  return new SendError("retryable", message);
}
