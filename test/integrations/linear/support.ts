import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NotifierOptions } from "../../../src/notifier/notifier.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../../support/dispatch.ts";
import { type FakeActivity, FakeLinear, type FakeTeam, type FakeUser } from "../../support/fake-linear.ts";
import { GitRemotes } from "../../support/git-remotes.ts";

/** Fast notifier timings for tests (Linear's 2 s plan window is a production value). */
export const FAST_NOTIFIER: Partial<NotifierOptions> = {
  tickMs: 50,
  editIntervalMs: { linear: 100 },
  outbox: { pollMs: 50, retryBaseMs: 50, retryMaxMs: 200 },
};

/** The repository every ENG issue works in (linear.teams.ENG.repository). */
export const REPO = "acme/app";

export interface LinearDispatch {
  t: TestDispatch;
  fake: FakeLinear;
  remotes: GitRemotes;
  team: FakeTeam;
  ada: FakeUser;
  /** Not a member of the ENG team. */
  mallory: FakeUser;
  /** Delivers a payload as Linear does; `opts` breaks it or repeats a delivery id. */
  deliver(
    payload: object,
    opts?: { delivery?: string; secret?: string; timestamp?: number; signature?: string },
  ): Promise<{ status: number; text: string }>;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are asserted field by field
  runs(query?: string): Promise<Array<Record<string, any>>>;
  /** Waits for an activity of the session that `match` accepts. */
  activity(
    sessionId: string,
    match: (a: FakeActivity) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<FakeActivity>;
  stop(): Promise<void>;
}

export function user(name: string): FakeUser {
  return { id: randomUUID(), name, email: `${name.toLowerCase()}@example.com` };
}

/** A real Dispatch on 127.0.0.1 with the Linear agent, talking to a FakeLinear. */
export async function startLinearDispatch(
  opts: { settings?: string; env?: Record<string, string>; notifier?: Partial<NotifierOptions> } = {},
): Promise<LinearDispatch> {
  const fake = await new FakeLinear().start();
  const remotes = new GitRemotes();
  remotes.create(REPO, { "README.md": "# app\n" });
  const ada = user("Ada");
  const mallory = user("Mallory");
  const team = fake.team("ENG", [ada.id]);
  const dir = await mkdtemp(join(tmpdir(), "dispatch-linear-"));
  const settingsPath = join(dir, "dispatch.config.yaml");
  await writeFile(settingsPath, opts.settings ?? `linear:\n  teams:\n    ENG:\n      repository: ${REPO}\n`);
  const t = await startTestDispatch(
    {
      LINEAR_ACCESS_TOKEN: fake.token,
      LINEAR_WEBHOOK_SECRET: fake.webhookSecret,
      LINEAR_API_URL: fake.url,
      DISPATCH_CONFIG_FILE: settingsPath,
      DISPATCH_POLL_INTERVAL_MS: "20",
      GITHUB_SERVER_URL: remotes.serverUrl,
      DISPATCH_ALLOW_FILE_REMOTES: "true",
      ...opts.env,
    },
    { notifier: { ...FAST_NOTIFIER, ...opts.notifier } },
  );
  const deliver: LinearDispatch["deliver"] = async (payload, o = {}) => {
    const { headers, body } = fake.signed(payload, o);
    const res = await fetch(`${t.url}/linear/webhooks`, { method: "POST", headers, body });
    return { status: res.status, text: await res.text() };
  };
  return {
    t,
    fake,
    remotes,
    team,
    ada,
    mallory,
    deliver,
    async runs(query = "") {
      const res = await t.api("GET", `/api/v1/agent/runs?limit=500${query}`);
      if (res.status !== 200) throw new Error(`listing runs: ${res.status} ${res.text}`);
      return res.body.runs;
    },
    activity(sessionId, match, what, timeoutMs = 30_000) {
      return waitFor(() => fake.activitiesOf(sessionId).find(match), { what, timeoutMs });
    },
    async stop() {
      await t.stop();
      await fake.stop();
      remotes.remove();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
