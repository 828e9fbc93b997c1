import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NotifierOptions } from "../../../src/notifier/notifier.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../../support/dispatch.ts";
import { FakeGitHub } from "../../support/fake-github.ts";
import {
  FakeJira,
  type FakeJiraComment,
  type FakeJiraIssue,
  type FakeJiraUser,
  type Flavour,
} from "../../support/fake-jira.ts";
import { GitRemotes } from "../../support/git-remotes.ts";

/** Fast notifier timings for tests (Jira's 5 s comment edit window is a production value). */
export const FAST_NOTIFIER: Partial<NotifierOptions> = {
  tickMs: 50,
  editIntervalMs: { jira: 100 },
  outbox: { pollMs: 50, retryBaseMs: 50, retryMaxMs: 200 },
};

/** The repository every PROJ issue works in (jira.projects.PROJ.repository). */
export const REPO = "acme/app";

export const SETTINGS = `jira:
  projects:
    PROJ:
      repository: ${REPO}
      transitions:
        started: In Progress
        pull_request: In Review
`;

export interface JiraDispatch {
  t: TestDispatch;
  jira: FakeJira;
  github: FakeGitHub;
  remotes: GitRemotes;
  /** Can browse PROJ. */
  ada: FakeJiraUser;
  /** Cannot browse PROJ. */
  mallory: FakeJiraUser;
  /** Delivers a webhook payload as Jira does; `opts` breaks it or repeats a delivery's identifier. */
  deliver(
    payload: object,
    opts?: { secret?: string; unsigned?: boolean; identifier?: string },
  ): Promise<{ status: number; text: string }>;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are asserted field by field
  runs(query?: string): Promise<Array<Record<string, any>>>;
  /** The runs started from the issue. */
  // biome-ignore lint/suspicious/noExplicitAny: test responses are asserted field by field
  runsOf(issue: FakeJiraIssue): Promise<Array<Record<string, any>>>;
  /** Waits for a comment of Dispatch's on the issue whose text `match` accepts. */
  comment(
    issue: FakeJiraIssue,
    match: (text: string) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<FakeJiraComment>;
  /** Resolves once every delivery acknowledged so far has been handled. */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A real Dispatch on 127.0.0.1 with the Jira surface, talking to a FakeJira of the given flavour, with its
 * runs delivered to local git remotes and their pull requests opened on a FakeGitHub.
 */
export async function startJiraDispatch(
  flavour: Flavour,
  opts: { settings?: string; env?: Record<string, string>; notifier?: Partial<NotifierOptions> } = {},
): Promise<JiraDispatch> {
  const jira = await new FakeJira(flavour).start();
  const github = await new FakeGitHub().start();
  const remotes = new GitRemotes();
  remotes.create(REPO, { "README.md": "# app\n" });
  github.gitRoot = remotes.root;
  const ada = jira.user("Ada");
  const mallory = jira.user("Mallory");
  jira.project("PROJ", [ada]);
  jira.project("OPS", [ada]);
  const dir = await mkdtemp(join(tmpdir(), "dispatch-jira-"));
  const settingsPath = join(dir, "dispatch.config.yaml");
  await writeFile(settingsPath, opts.settings ?? SETTINGS);
  const t = await startTestDispatch(
    {
      ...jira.env(),
      DISPATCH_CONFIG_FILE: settingsPath,
      DISPATCH_POLL_INTERVAL_MS: "20",
      GITHUB_SERVER_URL: remotes.serverUrl,
      DISPATCH_ALLOW_FILE_REMOTES: "true",
      GITHUB_TOKEN: github.token,
      GITHUB_API_URL: github.url,
      GITHUB_BOT_HANDLE: "dispatch",
      GITHUB_WEBHOOK_SECRET: "github-webhook-secret",
      ...opts.env,
    },
    {
      notifier: { ...FAST_NOTIFIER, ...opts.notifier },
      // Every answer of the fake is checked against jira.js's schemas of Jira's API.
      surfaceOptions: { jira: { onSchemaMismatch: "throw" } },
    },
  );
  const d: JiraDispatch = {
    t,
    jira,
    github,
    remotes,
    ada,
    mallory,
    async deliver(payload, o = {}) {
      const { path, headers, body } = jira.signed(payload, o);
      const res = await fetch(`${t.url}${path}`, { method: "POST", headers, body });
      return { status: res.status, text: await res.text() };
    },
    async runs(query = "") {
      const res = await t.api("GET", `/api/v1/agent/runs?limit=500${query}`);
      if (res.status !== 200) throw new Error(`listing runs: ${res.status} ${res.text}`);
      return res.body.runs;
    },
    async runsOf(issue) {
      return (await d.runs()).filter((r) =>
        String(r.trigger_url).startsWith(`${jira.url}/browse/${issue.key}`),
      );
    },
    comment(issue, match, what, timeoutMs = 30_000) {
      return waitFor(() => jira.botComments(issue).find((c) => match(jira.text(c.body))), {
        what,
        timeoutMs,
      });
    },
    settle: () => t.dispatch.surfaces.get("jira")!.inbound!.idle(),
    async stop() {
      await t.stop();
      await jira.stop();
      await github.stop();
      remotes.remove();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return d;
}
