import { createHmac, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback fake of a Jira site's REST API in either flavour, speaking its wire format: Cloud's REST v3
 * (`/rest/api/3/…`, Basic auth with an e-mail and API token, rich text as Atlassian Document Format) or
 * Data Center's REST v2 (`/rest/api/2/…`, a personal access token as Bearer, rich text as wiki markup).
 * It keeps projects, issues, comments (with their properties), remote links and a workflow with
 * transitions, answers user/permission/search from each user's browse permission, and can answer 429 with
 * Retry-After (Jira's rate limit), fail, or lose answers. Every request is recorded.
 *
 * It also sends Jira's webhooks, shaped as Jira sends them (`comment_created`, `jira:issue_updated` with a
 * changelog): on Cloud signed with `X-Hub-Signature: sha256=<HMAC-SHA256 hex of the body>`, on Data
 * Center to a URL that carries the secret.
 */
export type Flavour = "cloud" | "datacenter";

export interface FakeJiraUser {
  /** Account id on Cloud, username on Data Center. */
  id: string;
  name: string;
}

export interface FakeJiraComment {
  id: string;
  authorId: string;
  /** ADF on Cloud, wiki markup on Data Center: as Dispatch sent it. */
  body: unknown;
  properties: Array<{ key: string; value: unknown }>;
  created: number;
  /** Every body it had, the first one included. */
  versions: unknown[];
}

export interface FakeJiraIssue {
  id: string;
  key: string;
  projectKey: string;
  summary: string;
  /** ADF on Cloud, wiki markup on Data Center. */
  description: unknown;
  status: string;
  labels: string[];
  assignee: string | null;
  comments: FakeJiraComment[];
  remoteLinks: Array<{ globalId: string; url: string; title: string }>;
  /** Pull request URLs of the issue's development panel (what a development tool such as GitHub for Jira reports). */
  development: string[];
  /** Statuses the issue went through by Dispatch's transitions, in order. */
  transitions: string[];
}

export interface FakeRequest {
  method: string;
  /** The path without the REST prefix (`issue/PROJ-1/comment`). */
  path: string;
  at: number;
  status: number;
}

type Fault = { method: string; path: RegExp } & (
  | { kind: "ratelimit"; retryAfterS: number }
  | { kind: "status"; status: number }
  | { kind: "lost" }
);

/** The workflow every issue follows: its statuses, and the transition that leads into each. */
const WORKFLOW = [
  { id: "11", name: "Back to do", to: "To Do" },
  { id: "21", name: "Start progress", to: "In Progress" },
  { id: "31", name: "Ready for review", to: "In Review" },
  { id: "41", name: "Done", to: "Done" },
];

export class FakeJira {
  readonly flavour: Flavour;
  readonly email = "dispatch-bot@example.com";
  readonly apiToken = `ATATT${randomBytes(16).toString("hex")}`;
  readonly pat = `pat-${randomBytes(20).toString("hex")}`;
  readonly webhookSecret = randomBytes(24).toString("hex");
  readonly bot: FakeJiraUser;
  readonly projects = new Map<string, { browse: Set<string> }>();
  readonly issues = new Map<string, FakeJiraIssue>();
  readonly requests: FakeRequest[] = [];
  private readonly faults: Fault[] = [];
  private server: Server | undefined;
  private nextId = 10_000;
  url = "";

  constructor(flavour: Flavour) {
    this.flavour = flavour;
    this.bot =
      flavour === "cloud"
        ? { id: `712020:${randomUUID()}`, name: "Dispatch" }
        : { id: "dispatch-bot", name: "Dispatch" };
  }

  get prefix(): string {
    return this.flavour === "cloud" ? "/rest/api/3/" : "/rest/api/2/";
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** The environment that points Dispatch at this site as its service account. */
  env(): Record<string, string> {
    return this.flavour === "cloud"
      ? {
          JIRA_BASE_URL: this.url,
          JIRA_EMAIL: this.email,
          JIRA_API_TOKEN: this.apiToken,
          JIRA_BOT_ACCOUNT_ID: this.bot.id,
          JIRA_WEBHOOK_SECRET: this.webhookSecret,
        }
      : {
          JIRA_BASE_URL: this.url,
          JIRA_PAT: this.pat,
          JIRA_BOT_USERNAME: this.bot.id,
          JIRA_WEBHOOK_SECRET: this.webhookSecret,
        };
  }

  user(name: string): FakeJiraUser {
    return {
      id: this.flavour === "cloud" ? `712020:${randomUUID()}` : `${name.toLowerCase()}-${this.nextId++}`,
      name,
    };
  }

  /** A project whose issues `browsers` (and the service account) may browse. */
  project(key: string, browsers: FakeJiraUser[]): void {
    this.projects.set(key, { browse: new Set([this.bot.id, ...browsers.map((u) => u.id)]) });
  }

  /** An issue; `description` is plain lines, written as each flavour's rich text. */
  issue(
    projectKey: string,
    fields: { summary: string; description?: string; links?: string[]; development?: string[] },
  ): FakeJiraIssue {
    const id = String(this.nextId++);
    const number = [...this.issues.values()].filter((i) => i.projectKey === projectKey).length + 1;
    const issue: FakeJiraIssue = {
      id,
      key: `${projectKey}-${number}`,
      projectKey,
      summary: fields.summary,
      description: fields.description === undefined ? null : this.richText(fields.description),
      status: "To Do",
      labels: [],
      assignee: null,
      comments: [],
      remoteLinks: (fields.links ?? []).map((url) => ({ globalId: url, url, title: url })),
      development: fields.development ?? [],
      transitions: [],
    };
    this.issues.set(id, issue);
    return issue;
  }

  /**
   * Lines as this flavour's rich text: wiki markup as written on Data Center; on Cloud an ADF document of
   * one paragraph a line, where `*bold*` and `{{code}}` become marks.
   */
  richText(text: string, mention?: FakeJiraUser): unknown {
    const lines = text.split("\n");
    if (this.flavour === "datacenter") return `${mention ? `[~${mention.id}] ` : ""}${text}`;
    return {
      type: "doc",
      version: 1,
      content: lines.map((line, i) => ({
        type: "paragraph",
        content: [
          ...(mention && i === 0
            ? [
                { type: "mention", attrs: { id: mention.id, text: `@${mention.name}` } },
                { type: "text", text: " " },
              ]
            : []),
          ...inlineNodes(line),
        ],
      })),
    };
  }

  /** The comments Dispatch wrote on the issue, oldest first. */
  botComments(issue: FakeJiraIssue): FakeJiraComment[] {
    return issue.comments.filter((c) => c.authorId === this.bot.id);
  }

  /** A comment's text as a person reads it, whichever flavour wrote it (links as `label<url>`). */
  text(body: unknown): string {
    if (typeof body === "string") {
      return body
        .replace(/\[~([^\]]+)\]/g, "@$1")
        .replace(/\[([^|\]]*)\|([^\]]+)\]/g, "$1<$2>")
        .replace(/\\(.)/g, "$1");
    }
    const parts: string[] = [];
    const walk = (node: {
      type?: string;
      text?: string;
      attrs?: { text?: string; href?: string };
      content?: unknown[];
      marks?: Array<{ attrs?: { href?: string } }>;
    }) => {
      if (node.type === "text") {
        const href = node.marks?.find((m) => m.attrs?.href)?.attrs?.href;
        parts.push(href ? `${node.text}<${href}>` : (node.text ?? ""));
      }
      if (node.type === "mention") parts.push(node.attrs?.text ?? "");
      for (const child of (node.content ?? []) as Array<typeof node>) walk(child);
      if (node.type === "paragraph" || node.type === "codeBlock") parts.push("\n");
    };
    walk(body as Parameters<typeof walk>[0]);
    return parts.join("");
  }

  // --- faults ------------------------------------------------------------------------------------

  /** The next `times` requests matching `method` and `path` (without the REST prefix) answer 429. */
  rateLimit(method: string, path: RegExp, times: number, retryAfterS: number): void {
    for (let i = 0; i < times; i++) this.faults.push({ method, path, kind: "ratelimit", retryAfterS });
  }

  fail(method: string, path: RegExp, times: number, status: number): void {
    for (let i = 0; i < times; i++) this.faults.push({ method, path, kind: "status", status });
  }

  /** The next `times` matching requests are carried out, but their answer is lost (a 502 from a proxy). */
  loseAnswer(method: string, path: RegExp, times: number): void {
    for (let i = 0; i < times; i++) this.faults.push({ method, path, kind: "lost" });
  }

  // --- webhooks ----------------------------------------------------------------------------------

  private issueRef(issue: FakeJiraIssue) {
    return {
      id: issue.id,
      self: `${this.url}/rest/api/2/issue/${issue.id}`,
      key: issue.key,
      fields: {
        summary: issue.summary,
        issuetype: { id: "10001", name: "Task", subtask: false },
        project: { id: "10000", key: issue.projectKey, name: `${issue.projectKey} project` },
        status: { name: issue.status },
        labels: [...issue.labels],
      },
    };
  }

  private userRef(user: FakeJiraUser) {
    return this.flavour === "cloud"
      ? { accountId: user.id, displayName: user.name, active: true, accountType: "atlassian" }
      : { name: user.id, key: user.id, displayName: user.name, active: true };
  }

  /** `comment_created`: `author` wrote `text` on the issue, mentioning the service account unless told not to. */
  commentCreated(
    issue: FakeJiraIssue,
    author: FakeJiraUser,
    text: string,
    opts: { mention?: boolean } = {},
  ): Record<string, unknown> {
    const body = this.richText(text, opts.mention === false ? undefined : this.bot);
    const comment = this.addComment(issue, author.id, body, []);
    return {
      timestamp: Date.now(),
      webhookEvent: "comment_created",
      comment: {
        self: `${this.url}/rest/api/2/issue/${issue.id}/comment/${comment.id}`,
        id: comment.id,
        author: this.userRef(author),
        body,
        updateAuthor: this.userRef(author),
        created: new Date(comment.created).toISOString(),
        updated: new Date(comment.created).toISOString(),
      },
      issue: this.issueRef(issue),
    };
  }

  /** `jira:issue_updated`: `by` added `label` to the issue. */
  labelAdded(issue: FakeJiraIssue, by: FakeJiraUser, label: string): Record<string, unknown> {
    const before = issue.labels.join(" ");
    issue.labels.push(label);
    return this.updated(issue, by, {
      field: "labels",
      fieldtype: "jira",
      fieldId: "labels",
      from: null,
      fromString: before,
      to: null,
      toString: issue.labels.join(" "),
    });
  }

  /** `jira:issue_updated`: `by` assigned the issue to `assignee`. */
  assigned(issue: FakeJiraIssue, by: FakeJiraUser, assignee: FakeJiraUser): Record<string, unknown> {
    const before = issue.assignee;
    issue.assignee = assignee.id;
    return this.updated(issue, by, {
      field: "assignee",
      fieldtype: "jira",
      fieldId: "assignee",
      from: before,
      fromString: before,
      to: assignee.id,
      toString: assignee.name,
    });
  }

  private updated(issue: FakeJiraIssue, by: FakeJiraUser, item: Record<string, unknown>) {
    return {
      timestamp: Date.now(),
      webhookEvent: "jira:issue_updated",
      issue_event_type_name: "issue_updated",
      user: this.userRef(by),
      issue: this.issueRef(issue),
      changelog: { id: String(this.nextId++), items: [item] },
    };
  }

  /**
   * The request Jira makes for a webhook: Cloud signs the body; Data Center's URL carries the secret.
   * `opts` breaks it (another secret, no signature) or repeats a delivery's identifier.
   */
  signed(
    payload: object,
    opts: { secret?: string; unsigned?: boolean; identifier?: string } = {},
  ): { path: string; headers: Record<string, string>; body: string } {
    const body = JSON.stringify(payload);
    const secret = opts.secret ?? this.webhookSecret;
    const headers: Record<string, string> = {
      "content-type": "application/json; charset=utf-8",
      "x-atlassian-webhook-identifier": opts.identifier ?? randomUUID(),
    };
    if (this.flavour === "datacenter") {
      const query = opts.unsigned ? "" : `?secret=${encodeURIComponent(secret)}`;
      return { path: `/jira/webhooks${query}`, headers, body };
    }
    if (!opts.unsigned) {
      headers["x-hub-signature"] = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
    }
    return { path: "/jira/webhooks", headers, body };
  }

  // --- the REST API ------------------------------------------------------------------------------

  private addComment(
    issue: FakeJiraIssue,
    authorId: string,
    body: unknown,
    properties: Array<{ key: string; value: unknown }>,
  ): FakeJiraComment {
    const comment: FakeJiraComment = {
      id: String(this.nextId++),
      authorId,
      body,
      properties,
      created: Date.now(),
      versions: [body],
    };
    issue.comments.push(comment);
    return comment;
  }

  private authorized(req: IncomingMessage): boolean {
    const auth = req.headers.authorization ?? "";
    if (this.flavour === "datacenter") return auth === `Bearer ${this.pat}`;
    return auth === `Basic ${Buffer.from(`${this.email}:${this.apiToken}`).toString("base64")}`;
  }

  private commentJson(c: FakeJiraComment, withProperties: boolean) {
    const author =
      c.authorId === this.bot.id
        ? this.userRef(this.bot)
        : this.userRef({ id: c.authorId, name: c.authorId });
    return {
      self: `${this.url}${this.prefix}comment/${c.id}`,
      id: c.id,
      author,
      body: c.body,
      created: new Date(c.created).toISOString(),
      updated: new Date(c.created).toISOString(),
      ...(withProperties ? { properties: c.properties } : {}),
    };
  }

  private findIssue(idOrKey: string): FakeJiraIssue | undefined {
    return this.issues.get(idOrKey) ?? [...this.issues.values()].find((i) => i.key === idOrKey);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? "/", this.url);
    const method = req.method ?? "GET";
    const path = url.pathname.startsWith(this.prefix) ? url.pathname.slice(this.prefix.length) : url.pathname;
    const record: FakeRequest = { method, path, at: Date.now(), status: 0 };
    this.requests.push(record);
    const send = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      if (body === undefined) {
        res.writeHead(status, headers);
        return void res.end();
      }
      res.writeHead(status, { "content-type": "application/json;charset=UTF-8", ...headers });
      res.end(JSON.stringify(body));
    };
    if (!this.authorized(req)) {
      return send(401, {
        errorMessages: ["You are not authenticated. Authentication required to perform this operation."],
        errors: {},
      });
    }
    if (method === "GET" && url.pathname === "/rest/dev-status/latest/issue/detail") {
      const issue = this.issues.get(url.searchParams.get("issueId") ?? "");
      if (!issue || url.searchParams.get("dataType") !== "pullrequest")
        return send(400, { errors: ["Bad request"] });
      const pullRequests = issue.development.map((u, i) => ({ id: `#${i + 1}`, url: u, status: "OPEN" }));
      return send(200, { errors: [], detail: [{ pullRequests, branches: [], repositories: [] }] });
    }
    if (!url.pathname.startsWith(this.prefix))
      return send(404, { errorMessages: ["No such REST API"], errors: {} });
    const fault = this.faults.findIndex((f) => f.method === method && f.path.test(path));
    let lost = false;
    if (fault >= 0) {
      const [f] = this.faults.splice(fault, 1);
      if (f!.kind === "ratelimit") {
        return send(
          429,
          { errorMessages: ["Rate limit exceeded."], errors: {} },
          { "retry-after": String(f!.retryAfterS) },
        );
      }
      if (f!.kind === "status")
        return send(f!.status, { errorMessages: ["Internal server error"], errors: {} });
      lost = true;
    }
    let body: Record<string, unknown> = {};
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : {};
    } catch {
      return send(400, { errorMessages: ["Unexpected character in the body"], errors: {} });
    }
    const answer = this.route(method, path, url.searchParams, body);
    if (lost) {
      record.status = 502;
      res.writeHead(502, { "content-type": "text/html" });
      return void res.end("<html><body>Bad gateway</body></html>");
    }
    send(answer.status, answer.body);
  }

  private route(
    method: string,
    path: string,
    query: URLSearchParams,
    body: Record<string, unknown>,
  ): { status: number; body?: unknown } {
    const notFound = {
      status: 404,
      body: { errorMessages: ["Issue does not exist or you do not have permission to see it."], errors: {} },
    };
    if (method === "GET" && path === "user/permission/search") {
      const who = query.get(this.flavour === "cloud" ? "accountId" : "username") ?? "";
      const project = this.projects.get(query.get("projectKey") ?? "");
      if (!project)
        return { status: 404, body: { errorMessages: ["No project could be found"], errors: {} } };
      if (query.get("permissions") !== "BROWSE_PROJECTS") {
        return { status: 400, body: { errorMessages: ["Unknown permission"], errors: {} } };
      }
      // Data Center's `username` matches names by prefix, as Jira's user search does.
      const candidates = [...project.browse].filter((id) =>
        this.flavour === "cloud" ? id === who : id.startsWith(who),
      );
      return { status: 200, body: candidates.map((id) => this.userRef({ id, name: id })) };
    }
    const m = /^issue\/([^/]+)(?:\/(comment|transitions|remotelink)(?:\/([^/]+))?)?$/.exec(path);
    const issue = m ? this.findIssue(decodeURIComponent(m[1]!)) : undefined;
    if (!m || !issue) return notFound;
    const [, , sub, subId] = m;
    if (!sub && method === "GET") {
      return {
        status: 200,
        body: {
          id: issue.id,
          key: issue.key,
          self: `${this.url}${this.prefix}issue/${issue.id}`,
          fields: {
            summary: issue.summary,
            description: issue.description,
            project: { id: "10000", key: issue.projectKey, name: `${issue.projectKey} project` },
            status: { id: "1", name: issue.status },
          },
        },
      };
    }
    if (sub === "comment" && !subId && method === "POST") {
      if (this.flavour === "datacenter" && typeof body.body !== "string")
        return badRequest("Comment body must be wiki markup");
      if (this.flavour === "cloud" && (body.body as { type?: string } | undefined)?.type !== "doc") {
        return badRequest("Comment body is not a valid document");
      }
      const props = Array.isArray(body.properties) ? (body.properties as FakeJiraComment["properties"]) : [];
      return {
        status: 201,
        body: this.commentJson(this.addComment(issue, this.bot.id, body.body, props), false),
      };
    }
    if (sub === "comment" && subId && method === "PUT") {
      const comment = issue.comments.find((c) => c.id === subId);
      if (!comment) return notFound;
      if (comment.authorId !== this.bot.id)
        return { status: 403, body: { errorMessages: ["You cannot edit this comment"], errors: {} } };
      comment.body = body.body;
      comment.versions.push(body.body);
      return { status: 200, body: this.commentJson(comment, false) };
    }
    if (sub === "comment" && !subId && method === "GET") {
      const sorted = [...issue.comments].sort((a, b) =>
        query.get("orderBy") === "-created"
          ? b.created - a.created || Number(b.id) - Number(a.id)
          : a.created - b.created,
      );
      const startAt = Number(query.get("startAt") ?? 0);
      const maxResults = Number(query.get("maxResults") ?? 50);
      const page = sorted.slice(startAt, startAt + maxResults);
      const expand = (query.get("expand") ?? "").split(",").includes("properties");
      return {
        status: 200,
        body: {
          startAt,
          maxResults,
          total: sorted.length,
          comments: page.map((c) => this.commentJson(c, expand)),
        },
      };
    }
    if (sub === "transitions" && method === "GET") {
      const transitions = WORKFLOW.filter((t) => t.to !== issue.status).map((t) => ({
        id: t.id,
        name: t.name,
        to: { id: t.id, name: t.to, statusCategory: { key: "indeterminate" } },
        hasScreen: false,
        isGlobal: true,
      }));
      return { status: 200, body: { expand: "transitions", transitions } };
    }
    if (sub === "transitions" && method === "POST") {
      const id = (body.transition as { id?: string } | undefined)?.id;
      const transition = WORKFLOW.find((t) => t.id === id && t.to !== issue.status);
      if (!transition) return badRequest(`Transition id '${id}' is not valid for this issue.`);
      issue.status = transition.to;
      issue.transitions.push(transition.to);
      return { status: 204 };
    }
    if (sub === "remotelink" && method === "GET") {
      return {
        status: 200,
        body: issue.remoteLinks.map((l, i) => ({
          id: i + 1,
          globalId: l.globalId,
          object: { url: l.url, title: l.title },
        })),
      };
    }
    if (sub === "remotelink" && method === "POST") {
      const object = body.object as { url?: string; title?: string } | undefined;
      if (!object?.url || !object.title) return badRequest("object.url and object.title are required");
      const globalId = String(body.globalId ?? object.url);
      const existing = issue.remoteLinks.findIndex((l) => l.globalId === globalId);
      const link = { globalId, url: object.url, title: object.title };
      if (existing >= 0) issue.remoteLinks[existing] = link;
      else issue.remoteLinks.push(link);
      const id = (existing >= 0 ? existing : issue.remoteLinks.length - 1) + 1;
      return {
        status: existing >= 0 ? 200 : 201,
        body: { id, self: `${this.url}${this.prefix}issue/${issue.id}/remotelink/${id}` },
      };
    }
    return notFound;
  }
}

/** A line's text nodes, `*bold*` and `{{code}}` as ADF marks. */
function inlineNodes(line: string): Array<Record<string, unknown>> {
  return line
    .split(/(\*[^*\s][^*]*\*|\{\{[^}]+\}\})/)
    .filter(Boolean)
    .map((part) => {
      if (/^\*.+\*$/.test(part))
        return { type: "text", text: part.slice(1, -1), marks: [{ type: "strong" }] };
      if (/^\{\{.+\}\}$/.test(part))
        return { type: "text", text: part.slice(2, -2), marks: [{ type: "code" }] };
      return { type: "text", text: part };
    });
}

function badRequest(message: string) {
  return { status: 400, body: { errorMessages: [message], errors: {} } };
}
