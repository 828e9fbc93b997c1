import { createHmac, generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { WebhookDefinition } from "@octokit/webhooks-examples";
import type { NotifierOptions } from "../../../src/notifier/notifier.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../../support/dispatch.ts";
import { FakeGitHub } from "../../support/fake-github.ts";
import { GitHttpServer } from "../../support/git-http-server.ts";
import { GitRemotes } from "../../support/git-remotes.ts";

/** The package is JSON (its main is index.json): loaded with require, typed by its index.d.ts. */
const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as WebhookDefinition[];

export const WEBHOOK_SECRET = "It's a Secret to Everybody";
export const HANDLE = "dispatch";
export const APP_ID = "123456";
export const INSTALLATION_ID = 4242;

/** Fast notifier timings for tests (the 10 s GitHub edit window is a production value). */
export const FAST_NOTIFIER: Partial<NotifierOptions> = {
  tickMs: 50,
  editIntervalMs: { slack: 200, github: 200 },
  outbox: { pollMs: 50, retryBaseMs: 50, retryMaxMs: 200 },
};

// biome-ignore lint/suspicious/noExplicitAny: payloads are real GitHub shapes, edited field by field
export type Payload = Record<string, any>;

/** issue_comment.created as GitHub sends it (the example with an installation), deep-copied. */
function exampleComment(): Payload {
  const def = examples.find((e) => e.name === "issue_comment");
  const example = def?.examples.find(
    (e) => (e as Payload).action === "created" && (e as Payload).installation,
  );
  if (!example) throw new Error("no issue_comment.created example with an installation");
  return structuredClone(example) as Payload;
}

let commentSeq = 0;

export interface CommentOptions {
  body: string;
  login?: string;
  userType?: "User" | "Bot";
  action?: "created" | "edited" | "deleted";
  issue?: number;
  issueTitle?: string;
  issueBody?: string;
  pullRequest?: boolean;
  authorAssociation?: string;
  commentId?: number;
  performedViaAppId?: number;
}

/** A real-shaped issue_comment payload with these fields changed. */
export function commentPayload(o: CommentOptions): Payload {
  const p = exampleComment();
  const repo = p.repository.full_name as string;
  const issue = o.issue ?? 1;
  const id = o.commentId ?? 900_000_000 + ++commentSeq;
  const login = o.login ?? "octocat";
  const user = { ...p.comment.user, login, type: o.userType ?? "User" };
  p.action = o.action ?? "created";
  p.issue.number = issue;
  p.issue.html_url = `https://github.com/${repo}/${o.pullRequest ? "pull" : "issues"}/${issue}`;
  if (o.issueTitle !== undefined) p.issue.title = o.issueTitle;
  if (o.issueBody !== undefined) p.issue.body = o.issueBody;
  if (o.pullRequest) {
    p.issue.pull_request = {
      url: `https://api.github.com/repos/${repo}/pulls/${issue}`,
      html_url: `https://github.com/${repo}/pull/${issue}`,
      diff_url: `https://github.com/${repo}/pull/${issue}.diff`,
      patch_url: `https://github.com/${repo}/pull/${issue}.patch`,
      merged_at: null,
    };
  } else {
    delete p.issue.pull_request;
  }
  p.comment.id = id;
  p.comment.node_id = `IC_${id}`;
  p.comment.body = o.body;
  p.comment.user = user;
  p.comment.html_url = `${p.issue.html_url}#issuecomment-${id}`;
  p.comment.author_association = o.authorAssociation ?? "COLLABORATOR";
  p.comment.performed_via_github_app = o.performedViaAppId ? { id: o.performedViaAppId, slug: HANDLE } : null;
  p.sender = { ...p.sender, login, type: o.userType ?? "User" };
  p.installation = { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  return p;
}

/**
 * A real-shaped payload of `event` with `action` (an example with an installation when there is one),
 * deep-copied, its sender a user and its installation the test's.
 */
export function eventPayload(event: string, action: string): Payload {
  const def = examples.find((e) => e.name === event);
  const all = (def?.examples ?? []) as Payload[];
  const example =
    all.find((e) => e.action === action && e.installation) ?? all.find((e) => e.action === action);
  if (!example) throw new Error(`no ${event}.${action} example`);
  const p = structuredClone(example);
  p.installation = { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  p.sender = { ...p.sender, type: "User" };
  return p;
}

/** `sha256=<hex>` of the raw body under the webhook secret, exactly as GitHub signs deliveries. */
export function signGitHub(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export interface GitHubResponse {
  status: number;
  text: string;
}

export interface GitHubDispatch {
  t: TestDispatch;
  fake: FakeGitHub;
  repo: string;
  /**
   * The git server (GITHUB_SERVER_URL): runs started from a comment work in the triggering repository,
   * `repo`, a bare repository here whose default branch is `master` (as the webhook examples say).
   */
  remotes: GitRemotes;
  /** With `gitOverHttp`: the smart-HTTP git server in front of `remotes`, taking the fake's token. */
  gitServer?: GitHttpServer;
  /** Delivers a payload as GitHub does (override any header to break it). */
  deliver(
    payload: Payload,
    opts?: { event?: string; delivery?: string; headers?: Record<string, string>; body?: string },
  ): Promise<GitHubResponse>;
  /** Delivers an issue_comment with these fields. */
  comment(o: CommentOptions, delivery?: string): Promise<GitHubResponse & { payload: Payload }>;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are asserted field by field
  runs(): Promise<Array<Record<string, any>>>;
  /** Waits until every delivery acknowledged so far was handled and the outbox has nothing due. */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

/** A real Dispatch on 127.0.0.1 with the GitHub integration, talking to a FakeGitHub. */
export async function startGitHubDispatch(
  opts: {
    auth?: "token" | "app";
    settings?: string;
    env?: Record<string, string>;
    throttle?: boolean;
    notifier?: Partial<NotifierOptions>;
    /** Serve the repositories over smart HTTP behind the fake's token (token auth only), not file://. */
    gitOverHttp?: boolean;
    /** The web app's clock (tests expire sign-ins without waiting). */
    web?: { now?: () => Date };
  } = {},
): Promise<GitHubDispatch> {
  const fake = await new FakeGitHub().start();
  const remotes = new GitRemotes();
  const exampleRepo = commentPayload({ body: "" }).repository;
  remotes.create(exampleRepo.full_name, { "README.md": "# Hello-World\n" }, exampleRepo.default_branch);
  fake.gitRoot = remotes.root;
  const gitServer = opts.gitOverHttp ? await new GitHttpServer(remotes.root, fake.token).start() : undefined;
  const dir = await mkdtemp(join(tmpdir(), "dispatch-github-"));
  const settingsPath = join(dir, "dispatch.config.yaml");
  await writeFile(settingsPath, opts.settings ?? "github: {}\n");
  const env: Record<string, string> = {
    GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
    GITHUB_API_URL: fake.url,
    GITHUB_BOT_HANDLE: HANDLE,
    DISPATCH_CONFIG_FILE: settingsPath,
    DISPATCH_POLL_INTERVAL_MS: "20",
    GITHUB_SERVER_URL: gitServer?.url ?? remotes.serverUrl,
    DISPATCH_ALLOW_FILE_REMOTES: "true",
  };
  if (opts.auth === "app") {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    const keyPath = join(dir, "app.pem");
    await writeFile(keyPath, pem);
    fake.app(APP_ID, publicKey.export({ type: "spki", format: "pem" }).toString(), HANDLE);
    env.GITHUB_APP_ID = APP_ID;
    env.GITHUB_PRIVATE_KEY = keyPath;
  } else {
    env.GITHUB_TOKEN = fake.token;
  }
  const t = await startTestDispatch(
    { ...env, ...opts.env },
    {
      notifier: { ...FAST_NOTIFIER, ...opts.notifier },
      surfaceOptions: { github: { throttle: opts.throttle ?? false } },
      ...(opts.web ? { web: opts.web } : {}),
    },
  );
  const repo = commentPayload({ body: "" }).repository.full_name as string;
  fake.installations.set(repo, INSTALLATION_ID);

  const deliver: GitHubDispatch["deliver"] = async (payload, o = {}) => {
    const body = o.body ?? JSON.stringify(payload);
    const res = await fetch(`${t.url}/github/webhooks`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "GitHub-Hookshot/7a5f1e2",
        "x-github-event": o.event ?? "issue_comment",
        "x-github-delivery": o.delivery ?? randomUUID(),
        "x-github-hook-id": "1234567",
        "x-github-hook-installation-target-type": "integration",
        "x-github-hook-installation-target-id": APP_ID,
        "x-hub-signature": `sha1=${createHmac("sha1", WEBHOOK_SECRET).update(body).digest("hex")}`,
        "x-hub-signature-256": signGitHub(WEBHOOK_SECRET, body),
        ...o.headers,
      },
      body,
    });
    const text = await res.text();
    return { status: res.status, text };
  };
  const runs = async () => {
    const res = await t.api("GET", "/api/v1/agent/runs?limit=500");
    if (res.status !== 200) throw new Error(`listing runs: ${res.status} ${res.text}`);
    return res.body.runs;
  };
  return {
    t,
    fake,
    repo,
    remotes,
    ...(gitServer ? { gitServer } : {}),
    deliver,
    async comment(o, delivery) {
      const payload = commentPayload(o);
      return { ...(await deliver(payload, delivery ? { delivery } : {})), payload };
    },
    runs,
    async settle() {
      await t.dispatch.surfaces.get("github")?.inbound?.idle();
      await waitFor(
        async () => {
          const rows = await t.dispatch.store.countOutboxByState();
          return rows.pending === 0 && rows.sending === 0;
        },
        { what: "the outbox to drain" },
      );
    },
    async stop() {
      await t.stop();
      await fake.stop();
      await gitServer?.stop();
      remotes.remove();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export function uniqueIssue(): number {
  return 1000 + Math.floor(Math.random() * 1_000_000) + randomBytes(1)[0]!;
}
