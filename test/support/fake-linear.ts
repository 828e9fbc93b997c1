import { createHmac, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { AgentSessionEventWebhookPayload } from "@linear/sdk/webhooks";

/**
 * A loopback fake of Linear's GraphQL API (the operations Dispatch's Linear agent makes), speaking its wire
 * format: POST with `{query, variables}` and `Authorization: Bearer <token>`, answers `{data}` or
 * `{errors: [{message, extensions}]}`, and Linear's rate limit — HTTP 400 with `extensions.code:
 * "RATELIMITED"` and `X-RateLimit-Requests-Reset` (epoch ms). It records every mutation, keeps the
 * issues, teams, sessions and activities they change, and can hold or fail requests. Point Dispatch at
 * it with LINEAR_API_URL = `fake.url`.
 *
 * It also sends Linear's webhooks: AgentSessionEvent payloads (`@linear/sdk`'s types) signed as Linear
 * signs them (`Linear-Signature`: HMAC-SHA256 hex of the raw body; `webhookTimestamp` in the body).
 */
export interface FakeTeam {
  id: string;
  key: string;
  name: string;
  members: Set<string>;
  states: Array<{ id: string; name: string; type: string; position: number }>;
}

export interface FakeIssue {
  id: string;
  identifier: string;
  title: string;
  description: string;
  url: string;
  teamId: string;
  stateId: string;
  delegateId: string | null;
  links: Array<{ url: string; title: string }>;
}

export interface FakeActivity {
  id: string;
  agentSessionId: string;
  content: Record<string, unknown> & { type: string };
  ephemeral: boolean;
  at: number;
}

export interface FakeMutation {
  field: string;
  variables: Record<string, unknown>;
  at: number;
}

export interface FakeUser {
  id: string;
  name: string;
  email: string;
}

/** A payload as it travels: the SDK types Linear's DateTime scalars as Date, JSON carries ISO strings. */
export type Wire<T> = T extends Date
  ? string
  : T extends Array<infer U>
    ? Array<Wire<U>>
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;
export type SessionEventPayload = Wire<AgentSessionEventWebhookPayload>;

type Fault = { field: string; match: (variables: Record<string, unknown>) => boolean } & (
  | { kind: "ratelimit"; resetInMs: number }
  | { kind: "status"; status: number }
  | { kind: "lost" }
);

export class FakeLinear {
  readonly token = `lin_oauth_${randomUUID().replace(/-/g, "")}`;
  readonly organizationId = randomUUID();
  readonly appUserId = randomUUID();
  readonly webhookSecret = `lin_wh_${randomUUID().replace(/-/g, "")}`;
  readonly teams = new Map<string, FakeTeam>();
  readonly issues = new Map<string, FakeIssue>();
  /** Agent session id → issue id. */
  readonly sessions = new Map<string, string>();
  readonly activities: FakeActivity[] = [];
  readonly mutations: FakeMutation[] = [];
  /** Every operation received (queries too, and those refused), by its root field. */
  readonly received: Array<{ field: string; variables: Record<string, unknown> }> = [];
  readonly sessionUpdates: Array<{ id: string; input: Record<string, unknown> }> = [];
  private readonly faults: Fault[] = [];
  private readonly held = new Map<string, Array<() => void>>();
  private readonly holding = new Set<string>();
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/graphql`;
    return this;
  }

  async stop(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** A team with the usual workflow (Backlog, Todo, In Progress, In Review, Done, Canceled). */
  team(key: string, members: string[]): FakeTeam {
    const id = randomUUID();
    const team: FakeTeam = {
      id,
      key,
      name: `${key} team`,
      members: new Set(members),
      states: [
        { id: randomUUID(), name: "Backlog", type: "backlog", position: 0 },
        { id: randomUUID(), name: "Todo", type: "unstarted", position: 1 },
        { id: randomUUID(), name: "In Review", type: "started", position: 3 },
        { id: randomUUID(), name: "In Progress", type: "started", position: 2 },
        { id: randomUUID(), name: "Done", type: "completed", position: 4 },
        { id: randomUUID(), name: "Canceled", type: "canceled", position: 5 },
      ],
    };
    this.teams.set(id, team);
    return team;
  }

  issue(team: FakeTeam, fields: { title: string; description?: string; links?: string[] }): FakeIssue {
    const number = this.issues.size + 1;
    const identifier = `${team.key}-${number}`;
    const issue: FakeIssue = {
      id: randomUUID(),
      identifier,
      title: fields.title,
      description: fields.description ?? "",
      url: `https://linear.app/acme/issue/${identifier}/${fields.title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`,
      teamId: team.id,
      stateId: team.states.find((s) => s.type === "unstarted")!.id,
      delegateId: null,
      links: (fields.links ?? []).map((url) => ({ url, title: url })),
    };
    this.issues.set(issue.id, issue);
    return issue;
  }

  stateOf(issue: FakeIssue): string {
    const team = this.teams.get(issue.teamId)!;
    return team.states.find((s) => s.id === issue.stateId)!.name;
  }

  activitiesOf(sessionId: string): FakeActivity[] {
    return this.activities.filter((a) => a.agentSessionId === sessionId);
  }

  /** The next `times` requests whose root field is `field` (and whose variables `match`) fail with Linear's RATELIMITED. */
  rateLimit(field: string, times: number, resetInMs: number, match: Fault["match"] = () => true): void {
    for (let i = 0; i < times; i++) this.faults.push({ field, match, kind: "ratelimit", resetInMs });
  }

  /** The next `times` requests whose root field is `field` (and whose variables `match`) fail with this HTTP status. */
  fail(field: string, times: number, status: number, match: Fault["match"] = () => true): void {
    for (let i = 0; i < times; i++) this.faults.push({ field, match, kind: "status", status });
  }

  /** The next `times` matching requests are carried out, but their answer is lost (a 502 from a proxy). */
  loseAnswer(field: string, times: number, match: Fault["match"] = () => true): void {
    for (let i = 0; i < times; i++) this.faults.push({ field, match, kind: "lost" });
  }

  /** Requests with this root field wait, unanswered, until `release`. */
  hold(field: string): void {
    this.holding.add(field);
  }

  /** How many requests are being held for `field`. */
  heldCount(field: string): number {
    return this.held.get(field)?.length ?? 0;
  }

  release(): void {
    this.holding.clear();
    for (const waiters of this.held.values()) for (const go of waiters.splice(0)) go();
  }

  // --- webhooks ----------------------------------------------------------------------------------

  /** A `created` event: the issue delegated to the agent (or, with `comment`, the agent mentioned). */
  created(
    issue: FakeIssue,
    creator: FakeUser,
    opts: { comment?: string; sessionId?: string } = {},
  ): SessionEventPayload {
    const sessionId = opts.sessionId ?? randomUUID();
    this.sessions.set(sessionId, issue.id);
    const team = this.teams.get(issue.teamId)!;
    const now = new Date().toISOString();
    const comment = opts.comment
      ? { id: randomUUID(), body: opts.comment, userId: creator.id, issueId: issue.id }
      : undefined;
    return {
      type: "AgentSessionEvent",
      action: "created",
      createdAt: now,
      organizationId: this.organizationId,
      oauthClientId: "oauth-client",
      appUserId: this.appUserId,
      webhookId: "webhook-1",
      webhookTimestamp: Date.now(),
      promptContext: [
        `<issue identifier="${issue.identifier}">`,
        `<title>${issue.title}</title>`,
        "<description>",
        issue.description,
        "</description>",
        `<team name="${team.name}"/>`,
        "</issue>",
        ...(comment
          ? [
              `<primary-directive-thread comment-id="${comment.id}">`,
              `<comment author="${creator.name}">`,
              comment.body,
              "</comment>",
              "</primary-directive-thread>",
            ]
          : []),
      ].join("\n"),
      agentSession: {
        id: sessionId,
        appUserId: this.appUserId,
        organizationId: this.organizationId,
        createdAt: now,
        updatedAt: now,
        status: "pending",
        type: "commentThread",
        creatorId: creator.id,
        creator: {
          id: creator.id,
          name: creator.name,
          email: creator.email,
          url: `https://linear.app/acme/profiles/${creator.id}`,
        },
        issueId: issue.id,
        issue: {
          id: issue.id,
          identifier: issue.identifier,
          title: issue.title,
          description: issue.description,
          url: issue.url,
          teamId: team.id,
          team: { id: team.id, key: team.key, name: team.name },
        },
        ...(comment ? { commentId: comment.id, comment } : {}),
      },
    };
  }

  /** A `prompted` event: `body` written in the session, or the stop signal. */
  prompted(
    sessionId: string,
    user: FakeUser,
    body: string,
    opts: { signal?: "stop" } = {},
  ): SessionEventPayload {
    const issue = this.issues.get(this.sessions.get(sessionId)!)!;
    const team = this.teams.get(issue.teamId)!;
    const now = new Date().toISOString();
    return {
      type: "AgentSessionEvent",
      action: "prompted",
      createdAt: now,
      organizationId: this.organizationId,
      oauthClientId: "oauth-client",
      appUserId: this.appUserId,
      webhookId: "webhook-1",
      webhookTimestamp: Date.now(),
      agentSession: {
        id: sessionId,
        appUserId: this.appUserId,
        organizationId: this.organizationId,
        createdAt: now,
        updatedAt: now,
        status: "active",
        type: "commentThread",
        issueId: issue.id,
        issue: {
          id: issue.id,
          identifier: issue.identifier,
          title: issue.title,
          description: issue.description,
          url: issue.url,
          teamId: team.id,
          team: { id: team.id, key: team.key, name: team.name },
        },
      },
      agentActivity: {
        id: randomUUID(),
        agentSessionId: sessionId,
        createdAt: now,
        updatedAt: now,
        content: { type: "prompt", body },
        ...(opts.signal ? { signal: opts.signal } : {}),
        userId: user.id,
        user: {
          id: user.id,
          name: user.name,
          email: user.email,
          url: `https://linear.app/acme/profiles/${user.id}`,
        },
      },
    };
  }

  /** Headers and body of a delivery as Linear sends it (override anything to break it). */
  signed(
    payload: object,
    opts: { delivery?: string; secret?: string; timestamp?: number; signature?: string } = {},
  ): { headers: Record<string, string>; body: string } {
    const body = JSON.stringify({ ...payload, webhookTimestamp: opts.timestamp ?? Date.now() });
    const signature =
      opts.signature ??
      createHmac("sha256", opts.secret ?? this.webhookSecret)
        .update(body)
        .digest("hex");
    return {
      body,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "user-agent": "Linear-Webhook",
        "linear-delivery": opts.delivery ?? randomUUID(),
        "linear-event": "AgentSessionEvent",
        "linear-signature": signature,
      },
    };
  }

  // --- GraphQL -----------------------------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      return send(401, {
        errors: [
          {
            message: "Authentication required, not authenticated",
            extensions: { type: "authentication error", code: "AUTHENTICATION_ERROR" },
          },
        ],
      });
    }
    let parsed: { query?: string; variables?: Record<string, unknown> };
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return send(400, { errors: [{ message: "Body is not JSON" }] });
    }
    const query = parsed.query ?? "";
    const variables = parsed.variables ?? {};
    const m = /^\s*(query|mutation)\b[^{]*\{\s*(\w+)/.exec(query);
    if (!m) return send(400, { errors: [{ message: "Syntax Error: could not parse the document" }] });
    const [, kind, field] = m as unknown as [string, string, string];
    this.received.push({ field, variables });
    if (this.holding.has(field)) {
      await new Promise<void>((resolve) => {
        const waiters = this.held.get(field) ?? [];
        waiters.push(resolve);
        this.held.set(field, waiters);
      });
    }
    const fault = this.faults.findIndex((f) => f.field === field && f.match(variables));
    if (fault >= 0) {
      const [f] = this.faults.splice(fault, 1);
      if (f!.kind === "ratelimit") {
        return send(
          400,
          {
            errors: [
              {
                message: "Rate limit exceeded",
                extensions: {
                  code: "RATELIMITED",
                  type: "ratelimited",
                  userPresentableMessage: "Rate limit exceeded",
                },
              },
            ],
          },
          {
            "x-ratelimit-requests-limit": "1500",
            "x-ratelimit-requests-remaining": "0",
            "x-ratelimit-requests-reset": String(Date.now() + f!.resetInMs),
          },
        );
      }
      if (f!.kind === "status") {
        return send(f!.status, {
          errors: [{ message: "Internal server error", extensions: { type: "internal error" } }],
        });
      }
      if (kind === "mutation") this.mutations.push({ field, variables, at: Date.now() });
      try {
        this.answer(field, variables);
      } catch {
        // carried out or not, the answer is lost either way
      }
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html><body>502 Bad Gateway</body></html>");
      return;
    }
    if (kind === "mutation") this.mutations.push({ field, variables, at: Date.now() });
    try {
      send(200, { data: { [field]: this.answer(field, variables) } });
    } catch (err) {
      send(200, {
        data: null,
        errors: [
          {
            message: (err as Error).message,
            extensions: {
              type: "invalid input",
              code: "INPUT_ERROR",
              userPresentableMessage: (err as Error).message,
            },
          },
        ],
      });
    }
  }

  private answer(field: string, v: Record<string, unknown>): unknown {
    switch (field) {
      case "agentActivityCreate": {
        const input = v.input as {
          id?: string;
          agentSessionId: string;
          content: FakeActivity["content"];
          ephemeral?: boolean;
        };
        if (!this.sessions.has(input.agentSessionId)) throw new Error("Entity not found: AgentSession");
        const id = input.id ?? randomUUID();
        if (this.activities.some((a) => a.id === id)) throw new Error("Entity already exists: AgentActivity");
        this.activities.push({
          id,
          agentSessionId: input.agentSessionId,
          content: input.content,
          ephemeral: Boolean(input.ephemeral),
          at: Date.now(),
        });
        return { success: true, lastSyncId: this.mutations.length, agentActivity: { id } };
      }
      case "agentActivity": {
        const found = this.activities.find((a) => a.id === v.id);
        if (!found) throw new Error("Entity not found: AgentActivity");
        return { id: found.id };
      }
      case "agentSessionUpdate": {
        if (!this.sessions.has(String(v.id))) throw new Error("Entity not found: AgentSession");
        this.sessionUpdates.push({ id: String(v.id), input: v.input as Record<string, unknown> });
        return { success: true, lastSyncId: this.mutations.length };
      }
      case "agentSession": {
        const issue = this.issues.get(this.sessions.get(String(v.id)) ?? "");
        if (!issue) throw new Error("Entity not found: AgentSession");
        return { issue: { team: { id: issue.teamId } } };
      }
      case "issue": {
        const issue = this.issueById(String(v.id));
        const team = this.teams.get(issue.teamId)!;
        const state = team.states.find((s) => s.id === issue.stateId)!;
        return {
          state: { id: state.id, type: state.type },
          delegate: issue.delegateId ? { id: issue.delegateId } : null,
          team: {
            states: { nodes: team.states.map((s) => ({ id: s.id, type: s.type, position: s.position })) },
          },
          attachments: { nodes: issue.links.map((l) => ({ url: l.url })) },
        };
      }
      case "issueUpdate": {
        const issue = this.issueById(String(v.id));
        const input = v.input as { stateId?: string; delegateId?: string };
        if (input.stateId) issue.stateId = input.stateId;
        if (input.delegateId) issue.delegateId = input.delegateId;
        return { success: true, lastSyncId: this.mutations.length };
      }
      case "attachmentLinkURL": {
        const issue = this.issueById(String(v.issueId));
        const existing = issue.links.find((l) => l.url === v.url);
        if (existing) existing.title = String(v.title ?? existing.title);
        else issue.links.push({ url: String(v.url), title: String(v.title ?? v.url) });
        return { success: true, lastSyncId: this.mutations.length };
      }
      case "team": {
        const team = this.teams.get(String(v.id));
        if (!team) throw new Error("Entity not found: Team");
        const ids = [...team.members];
        const start = v.after ? Number(v.after) : 0;
        const page = ids.slice(start, start + 250);
        const more = start + 250 < ids.length;
        return {
          members: {
            nodes: page.map((id) => ({ id })),
            pageInfo: { hasNextPage: more, endCursor: more ? String(start + 250) : null },
          },
        };
      }
      default:
        throw new Error(`Cannot query field "${field}" in the fake`);
    }
  }

  private issueById(id: string): FakeIssue {
    const issue = this.issues.get(id) ?? [...this.issues.values()].find((i) => i.identifier === id);
    if (!issue) throw new Error("Entity not found: Issue");
    return issue;
  }
}
