import { execFileSync } from "node:child_process";
import { createPublicKey, createVerify, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback fake of the GitHub REST API (the few endpoints Dispatch uses), speaking its wire format:
 * JSON bodies, `Authorization: token|Bearer …`, 201 for created things, 404 `{"message":"Not Found"}`,
 * `x-ratelimit-*` headers on every answer, 403 secondary rate limits with `retry-after`, and the GitHub
 * App flow (RS256 JWT → POST /app/installations/{id}/access_tokens → installation token). Point code at
 * it with GITHUB_API_URL = `fake.url`.
 */
export interface GitHubCall {
  method: string;
  path: string;
  query: URLSearchParams;
  auth: string | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: request bodies are asserted field by field
  body: any;
  status: number;
  at: number;
}

export interface FakeComment {
  id: number;
  repo: string;
  issue_number: number;
  body: string;
  user: { login: string; type: string };
  html_url: string;
  created_at: string;
  updated_at: string;
  edits: number;
}

export interface FakePullRequest {
  number: number;
  repo: string;
  title: string;
  body: string;
  head: string;
  /** The repository of the head branch (another one for a fork). */
  headRepo: string;
  base: string;
  draft: boolean;
  state: "open" | "closed";
  html_url: string;
}

export interface FakeReviewComment {
  id: number;
  path: string;
  line: number | null;
  body: string;
  user: string;
}

export interface FakeCheckRun {
  id: number;
  name: string;
  conclusion: string;
  /** "github-actions" for a GitHub Actions job (its id is the job's). */
  app: string;
  output?: { title?: string; summary?: string; text?: string };
}

export interface FakeJob {
  id: number;
  name: string;
  conclusion: string;
  steps: Array<{ number: number; name: string; conclusion: string }>;
}

export type GitHubFailure =
  | { status: 403; retryAfter: number; secondary: true }
  | { status: 403; rateLimitReset: number }
  | { status: 500 | 502 };

export class FakeGitHub {
  readonly calls: GitHubCall[] = [];
  readonly comments = new Map<number, FakeComment>();
  readonly reactions: Array<{ repo: string; comment_id: number; content: string; user: string }> = [];
  /** Repository permission by login ("admin" | "write" | "read" | "none" | "maintain" | "triage"). */
  readonly permissions = new Map<string, string>();
  /** Permission on one repository, by "owner/repo:login": overrides `permissions` there. */
  readonly repoPermissions = new Map<string, string>();
  url = "";
  /** Token mode: the token Dispatch must send. */
  readonly token = `ghp_${randomBytes(18).toString("hex")}`;
  /** App mode: set with `app()`. */
  private appId: string | undefined;
  private publicKey: ReturnType<typeof createPublicKey> | undefined;
  private readonly installationTokens = new Map<string, { installation: number; expires: number }>();
  readonly installations = new Map<string, number>();
  private server: Server | undefined;
  private readonly failures: Array<{ match: (c: GitHubCall) => boolean; failure: GitHubFailure }> = [];
  private nextId = 1_000_000;
  private readonly held: Array<{ match: (c: GitHubCall) => boolean; gate: Promise<void> }> = [];
  readonly pulls: FakePullRequest[] = [];
  private nextPull = 100;
  /**
   * Where the repositories' git data lives (the GITHUB_SERVER_URL=file://… root): when set, opening a
   * pull request checks that its head and base branches exist, as GitHub does.
   */
  gitRoot: string | undefined;
  /** The login comments are written as (an App writes as "<slug>[bot]"). */
  botLogin = "dispatch-bot";
  /** Inline comments of a pull request review, by review id (GET …/pulls/{n}/reviews/{id}/comments). */
  readonly reviewComments = new Map<number, FakeReviewComment[]>();
  /** Replies Dispatch wrote in review threads (POST …/pulls/{n}/comments/{id}/replies). */
  readonly reviewReplies: Array<{ repo: string; pull: number; inReplyTo: number; body: string }> = [];
  /** Check runs of a check suite, by suite id (GET …/check-suites/{id}/check-runs). */
  readonly checkRuns = new Map<number, FakeCheckRun[]>();
  /** Jobs of a GitHub Actions workflow run, by run id (GET …/actions/runs/{id}/jobs). */
  readonly workflowJobs = new Map<number, FakeJob[]>();
  /** A job's log, by job id: …/actions/jobs/{id}/logs answers 302 to a link that serves it, as GitHub does. */
  readonly jobLogs = new Map<number, string>();

  /** Accepts the GitHub App `appId` whose private key matches `publicKeyPem`. */
  app(appId: string, publicKeyPem: string, slug = "dispatch"): this {
    this.appId = appId;
    this.publicKey = createPublicKey(publicKeyPem);
    this.botLogin = `${slug}[bot]`;
    return this;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(({ status, headers, body }) => {
        res.writeHead(status, {
          "content-type": "application/json; charset=utf-8",
          "x-github-media-type": "github.v3; format=json",
          "x-ratelimit-limit": "5000",
          "x-ratelimit-remaining": "4999",
          "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 3600),
          "x-ratelimit-used": "1",
          "x-ratelimit-resource": "core",
          ...headers,
        });
        res.end(status === 204 ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The next call matching `method path` (path may contain `*`) fails this way, once per failure. */
  failNext(route: string, ...failures: GitHubFailure[]): void {
    const match = routeMatcher(route);
    for (const failure of failures) this.failures.push({ match, failure });
  }

  /**
   * Calls matching `method path` (path may contain `*`) are received (and recorded in `calls`) but not
   * answered until the returned function is called.
   */
  holdBack(route: string): () => void {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hold = { match: routeMatcher(route), gate };
    this.held.push(hold);
    return () => {
      const i = this.held.indexOf(hold);
      if (i >= 0) this.held.splice(i, 1);
      release();
    };
  }

  /** Successful calls of `method` on paths matching `pattern` (a RegExp). */
  succeeded(method: string, pattern: RegExp): GitHubCall[] {
    return this.calls.filter((c) => c.method === method && pattern.test(c.path) && c.status < 300);
  }

  /**
   * A pull request someone opened (not through the API under test): `head` from `headRepo` (a fork when it
   * differs from `repo`) into `base`. Numbered like the pull requests Dispatch opens.
   */
  openPull(
    repo: string,
    pr: { head: string; base: string; headRepo?: string; title?: string; state?: "open" | "closed" },
  ): FakePullRequest {
    const number = ++this.nextPull;
    const pull: FakePullRequest = {
      number,
      repo,
      title: pr.title ?? `Change ${pr.head}`,
      body: "",
      head: pr.head,
      headRepo: pr.headRepo ?? repo,
      base: pr.base,
      draft: false,
      state: pr.state ?? "open",
      html_url: `https://github.com/${repo}/pull/${number}`,
    };
    this.pulls.push(pull);
    return pull;
  }

  /** Comments on an issue, oldest first. */
  issueComments(repo: string, issue: number): FakeComment[] {
    return [...this.comments.values()].filter((c) => c.repo === repo && c.issue_number === issue);
  }

  /** Comments written by Dispatch on an issue. */
  botComments(repo: string, issue: number): FakeComment[] {
    return this.issueComments(repo, issue).filter((c) => c.user.login === this.botLogin);
  }

  /** Images uploaded to comments: served at `attachmentUrl(id)` to authorised requests, as GitHub does. */
  private readonly assets = new Map<string, { bytes: Buffer; contentType: string }>();

  /** Uploads an image as a comment attachment; returns its link (`…/user-attachments/assets/<uuid>`). */
  uploadAttachment(bytes: Buffer, contentType = "image/png"): string {
    const id = randomUUID();
    this.assets.set(id, { bytes, contentType });
    return `${this.url}/user-attachments/assets/${id}`;
  }

  reactionsOn(commentId: number): string[] {
    return this.reactions.filter((r) => r.comment_id === commentId).map((r) => r.content);
  }

  private async handle(req: IncomingMessage) {
    const url = new URL(req.url ?? "/", "http://fake.github");
    const raw = await new Promise<string>((resolve) => {
      let data = "";
      req.setEncoding("utf8");
      req.on("data", (c) => (data += c));
      req.on("end", () => resolve(data));
    });
    const call: GitHubCall = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      auth: req.headers.authorization,
      body: raw ? safeJson(raw) : undefined,
      status: 0,
      at: Date.now(),
    };
    this.calls.push(call);
    await Promise.all(this.held.filter((h) => h.match(call)).map((h) => h.gate));
    const answer = this.answer(call);
    call.status = answer.status;
    return answer;
  }

  private answer(call: GitHubCall): { status: number; headers: Record<string, string>; body: unknown } {
    const ok = (status: number, body: unknown) => ({ status, headers: {}, body });
    const error = (status: number, message: string, headers: Record<string, string> = {}) => ({
      status,
      headers,
      body: { message, documentation_url: "https://docs.github.com/rest", status: String(status) },
    });
    const { method, path } = call;

    // --- GitHub App flow (JWT) ---
    const tokenMatch = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
    const repoInstallation = /^\/repos\/([^/]+\/[^/]+)\/installation$/.exec(path);
    if (tokenMatch || repoInstallation) {
      if (!this.verifyJwt(call.auth)) return error(401, "A JSON web token could not be decoded");
      if (tokenMatch && method === "POST") {
        const token = `ghs_${randomBytes(18).toString("hex")}`;
        const expires = Date.now() + 3600_000;
        this.installationTokens.set(token, { installation: Number(tokenMatch[1]), expires });
        return ok(201, {
          token,
          expires_at: new Date(expires).toISOString().replace(/\.\d{3}Z$/, "Z"),
          permissions: { issues: "write", pull_requests: "write", metadata: "read", contents: "write" },
          repository_selection: "all",
        });
      }
      if (repoInstallation && method === "GET") {
        const id = this.installations.get(repoInstallation[1]!);
        return id
          ? ok(200, { id, app_id: Number(this.appId), target_type: "Organization" })
          : error(404, "Not Found");
      }
    }

    const logLink = method === "GET" ? /^\/job-logs\/(\d+)$/.exec(path) : null;
    if (logLink) {
      const text = this.jobLogs.get(Number(logLink[1]));
      if (text === undefined || call.query.get("sig") !== "signed") return error(404, "Not Found");
      return {
        status: 200,
        headers: { "content-type": "text/plain; charset=utf-8" },
        body: Buffer.from(text),
      };
    }

    // --- everything else needs a token ---
    const token = /^(?:token|bearer)\s+(\S+)$/i.exec(call.auth ?? "")?.[1];
    const installationToken = token ? this.installationTokens.get(token) : undefined;
    const authorised = this.appId
      ? installationToken !== undefined && installationToken.expires > Date.now()
      : token === this.token;
    if (!authorised) return error(401, "Bad credentials");

    const failure = this.failures.findIndex((f) => f.match(call));
    if (failure >= 0) {
      const [f] = this.failures.splice(failure, 1);
      const spec = f!.failure;
      if (spec.status === 403 && "secondary" in spec) {
        return error(
          403,
          "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
          { "retry-after": String(spec.retryAfter) },
        );
      }
      if (spec.status === 403) {
        return error(403, "API rate limit exceeded for installation.", {
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset": String(spec.rateLimitReset),
        });
      }
      return error(spec.status, "Server Error");
    }

    const asset = method === "GET" ? /^\/user-attachments\/assets\/([^/]+)$/.exec(path) : null;
    if (asset) {
      const found = this.assets.get(asset[1]!);
      if (!found) return error(404, "Not Found");
      return { status: 200, headers: { "content-type": found.contentType }, body: found.bytes };
    }

    const route = (pattern: RegExp, ...methods: string[]) =>
      methods.includes(method) ? pattern.exec(path) : null;
    let m: RegExpExecArray | null = route(
      /^\/repos\/([^/]+\/[^/]+)\/collaborators\/([^/]+)\/permission$/,
      "GET",
    );
    if (m) {
      const login = decodeURIComponent(m[2]!);
      const permission =
        this.repoPermissions.get(`${m[1]!.toLowerCase()}:${login}`) ?? this.permissions.get(login) ?? "read";
      const role = permission;
      const legacy = role === "maintain" ? "write" : role === "triage" ? "read" : role;
      return ok(200, {
        permission: legacy,
        role_name: role,
        user: { login, id: 1, type: "User", permissions: {} },
      });
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/, "GET", "POST");
    if (m) {
      const repo = m[1]!;
      const issue = Number(m[2]);
      if (method === "POST") {
        if (typeof call.body?.body !== "string") return error(422, "Validation Failed");
        if (call.body.body.length > 65_536)
          return error(422, "Body is too long (maximum is 65536 characters)");
        const id = ++this.nextId;
        const now = new Date().toISOString();
        const comment: FakeComment = {
          id,
          repo,
          issue_number: issue,
          body: call.body.body,
          user: { login: this.botLogin, type: "Bot" },
          html_url: `https://github.com/${repo}/issues/${issue}#issuecomment-${id}`,
          created_at: now,
          updated_at: now,
          edits: 0,
        };
        this.comments.set(id, comment);
        return ok(201, this.wire(comment));
      }
      if (method === "GET") {
        const since = call.query.get("since");
        return ok(
          200,
          this.issueComments(repo, issue)
            .filter((c) => !since || c.updated_at >= since)
            .map((c) => this.wire(c)),
        );
      }
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/pulls$/, "GET", "POST");
    if (m) {
      const repo = m[1]!;
      if (method === "GET") {
        const state = call.query.get("state") ?? "open";
        const head = call.query.get("head");
        return ok(
          200,
          this.pulls
            .filter((p) => p.repo === repo && (state === "all" || p.state === state))
            .filter((p) => !head || `${p.headRepo.split("/")[0]}:${p.head}` === head)
            .map((p) => this.wirePull(p)),
        );
      }
      const { title, head, base, body, draft } = call.body ?? {};
      if (typeof title !== "string" || typeof head !== "string" || typeof base !== "string")
        return error(422, "Validation Failed");
      if (this.pulls.some((p) => p.repo === repo && p.state === "open" && p.head === head)) {
        return {
          status: 422,
          headers: {},
          body: {
            message: "Validation Failed",
            errors: [
              {
                resource: "PullRequest",
                code: "custom",
                message: `A pull request already exists for ${repo.split("/")[0]}:${head}.`,
              },
            ],
          },
        };
      }
      for (const [field, branch] of [
        ["head", head],
        ["base", base],
      ] as const) {
        if (this.gitRoot && !branchExists(this.gitRoot, repo, branch)) {
          return {
            status: 422,
            headers: {},
            body: {
              message: "Validation Failed",
              errors: [{ resource: "PullRequest", field, code: "invalid" }],
            },
          };
        }
      }
      const number = ++this.nextPull;
      const pr: FakePullRequest = {
        number,
        repo,
        title,
        body: typeof body === "string" ? body : "",
        head,
        headRepo: repo,
        base,
        draft: draft === true,
        state: "open",
        html_url: `https://github.com/${repo}/pull/${number}`,
      };
      this.pulls.push(pr);
      return ok(201, this.wirePull(pr));
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)$/, "GET");
    if (m) {
      const pr = this.pulls.find((p) => p.repo === m![1] && p.number === Number(m![2]));
      return pr ? ok(200, this.wirePull(pr)) : error(404, "Not Found");
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/issues\/comments\/(\d+)$/, "PATCH");
    if (m) {
      const comment = this.comments.get(Number(m[2]));
      if (!comment || comment.repo !== m[1]) return error(404, "Not Found");
      if (typeof call.body?.body !== "string") return error(422, "Validation Failed");
      comment.body = call.body.body;
      comment.updated_at = new Date().toISOString();
      comment.edits += 1;
      return ok(200, this.wire(comment));
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\/reviews\/(\d+)\/comments$/, "GET");
    if (m) {
      const comments = this.reviewComments.get(Number(m[3])) ?? [];
      return ok(
        200,
        comments.map((c) => ({
          id: c.id,
          pull_request_review_id: Number(m![3]),
          path: c.path,
          line: c.line,
          original_line: c.line,
          body: c.body,
          user: { login: c.user, type: "User" },
          html_url: `https://github.com/${m![1]}/pull/${m![2]}#discussion_r${c.id}`,
        })),
      );
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/pulls\/(\d+)\/comments\/(\d+)\/replies$/, "POST");
    if (m) {
      if (typeof call.body?.body !== "string") return error(422, "Validation Failed");
      this.reviewReplies.push({
        repo: m[1]!,
        pull: Number(m[2]),
        inReplyTo: Number(m[3]),
        body: call.body.body,
      });
      const id = ++this.nextId;
      return ok(201, {
        id,
        in_reply_to_id: Number(m[3]),
        body: call.body.body,
        user: { login: this.botLogin, type: "Bot" },
      });
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/check-suites\/(\d+)\/check-runs$/, "GET");
    if (m) {
      const runs = this.checkRuns.get(Number(m[2])) ?? [];
      return ok(200, {
        total_count: runs.length,
        check_runs: runs.map((r) => ({
          id: r.id,
          name: r.name,
          status: "completed",
          conclusion: r.conclusion,
          app: { slug: r.app, name: r.app },
          output: { title: null, summary: null, text: null, annotations_count: 0, ...r.output },
        })),
      });
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/actions\/runs\/(\d+)\/jobs$/, "GET");
    if (m) {
      const jobs = this.workflowJobs.get(Number(m[2])) ?? [];
      return ok(200, {
        total_count: jobs.length,
        jobs: jobs.map((j) => ({
          ...j,
          run_id: Number(m![2]),
          status: "completed",
          steps: j.steps.map((st) => ({ ...st, status: "completed" })),
        })),
      });
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/actions\/jobs\/(\d+)\/logs$/, "GET");
    if (m) {
      if (!this.jobLogs.has(Number(m[2]))) return error(404, "Not Found");
      return { status: 302, headers: { location: `${this.url}/job-logs/${m[2]}?sig=signed` }, body: "" };
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/pulls\/comments\/(\d+)\/reactions$/, "POST");
    if (m) {
      const content = String(call.body?.content ?? "");
      if (!["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"].includes(content)) {
        return error(422, "Validation Failed");
      }
      const commentId = Number(m[2]);
      const body = { id: commentId * 10 + 2, content, user: { login: this.botLogin, type: "Bot" } };
      if (this.reactions.some((r) => r.comment_id === commentId && r.content === content))
        return ok(200, body);
      this.reactions.push({ repo: m[1]!, comment_id: commentId, content, user: this.botLogin });
      return ok(201, body);
    }
    m = route(/^\/repos\/([^/]+\/[^/]+)\/issues\/comments\/(\d+)\/reactions$/, "POST");
    if (m) {
      const content = String(call.body?.content ?? "");
      if (!["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"].includes(content)) {
        return error(422, "Validation Failed");
      }
      const commentId = Number(m[2]);
      const existing = this.reactions.find(
        (r) => r.comment_id === commentId && r.content === content && r.user === this.botLogin,
      );
      const body = { id: commentId * 10 + 1, content, user: { login: this.botLogin, type: "Bot" } };
      if (existing) return ok(200, body);
      this.reactions.push({ repo: m[1]!, comment_id: commentId, content, user: this.botLogin });
      return ok(201, body);
    }
    return error(404, "Not Found");
  }

  private wirePull(p: FakePullRequest) {
    const owner = p.headRepo.split("/")[0]!;
    return {
      id: p.number * 7,
      number: p.number,
      state: p.state,
      title: p.title,
      body: p.body,
      draft: p.draft,
      html_url: p.html_url,
      url: `${this.url}/repos/${p.repo}/pulls/${p.number}`,
      head: { ref: p.head, label: `${owner}:${p.head}`, repo: { full_name: p.headRepo } },
      base: { ref: p.base, label: `${p.repo.split("/")[0]}:${p.base}`, repo: { full_name: p.repo } },
      user: { login: this.botLogin, type: "Bot" },
    };
  }

  private wire(c: FakeComment) {
    return {
      id: c.id,
      node_id: `IC_${c.id}`,
      url: `${this.url}/repos/${c.repo}/issues/comments/${c.id}`,
      html_url: c.html_url,
      issue_url: `${this.url}/repos/${c.repo}/issues/${c.issue_number}`,
      body: c.body,
      user: { login: c.user.login, id: 99, type: c.user.type },
      created_at: c.created_at,
      updated_at: c.updated_at,
      author_association: "NONE",
    };
  }

  /** An RS256 JWT signed with the App's key, `iss` = the App id, not expired. */
  private verifyJwt(auth: string | undefined): boolean {
    if (!this.publicKey || !this.appId) return false;
    const jwt = /^bearer\s+(\S+)$/i.exec(auth ?? "")?.[1];
    const parts = jwt?.split(".");
    if (parts?.length !== 3) return false;
    const verifier = createVerify("RSA-SHA256");
    verifier.update(`${parts[0]}.${parts[1]}`);
    if (!verifier.verify(this.publicKey, Buffer.from(parts[2]!, "base64url"))) return false;
    const claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as {
      iss?: unknown;
      exp?: number;
    };
    return String(claims.iss) === this.appId && (claims.exp ?? 0) * 1000 > Date.now();
  }
}

function branchExists(root: string, repo: string, branch: string): boolean {
  try {
    execFileSync(
      "git",
      ["--git-dir", `${root}/${repo}.git`, "rev-parse", "--verify", "--quiet", `refs/heads/${branch}`],
      {
        stdio: "ignore",
      },
    );
    return true;
  } catch {
    return false;
  }
}

/** `METHOD /path/with/*` → a matcher of calls. */
function routeMatcher(route: string): (c: GitHubCall) => boolean {
  const [method, pattern] = route.split(" ") as [string, string];
  const re = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replaceAll("*", "[^/]+")}$`);
  return (c) => c.method === method && re.test(c.path);
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
