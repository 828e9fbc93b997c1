import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { FakeLinear } from "../../support/fake-linear.ts";
import { GitRemotes } from "../../support/git-remotes.ts";
import {
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../../support/server-process.ts";
import { REPO, user } from "./support.ts";

/**
 * Verify, store, acknowledge, then handle: a `created` event acknowledged by a Dispatch that is killed
 * (SIGKILL) while handling it is handled by the next one, from the inbox, and starts its run once — also
 * when Linear delivers it again.
 */
describe("a Dispatch killed between acknowledging a Linear event and handling it", {
  timeout: 120_000,
}, () => {
  const fake = new FakeLinear();
  const remotes = new GitRemotes();
  const key = newAdminKey();
  let dir: string;
  let env: Record<string, string>;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    await fake.start();
    remotes.create(REPO, { "README.md": "# app\n" });
    dir = await mkdtemp(join(tmpdir(), "dispatch-linear-crash-"));
    await writeFile(
      join(dir, "dispatch.config.yaml"),
      `linear:\n  teams:\n    ENG:\n      repository: ${REPO}\n`,
    );
    env = {
      LINEAR_ACCESS_TOKEN: fake.token,
      LINEAR_WEBHOOK_SECRET: fake.webhookSecret,
      LINEAR_API_URL: fake.url,
      DISPATCH_CONFIG_FILE: join(dir, "dispatch.config.yaml"),
      GITHUB_SERVER_URL: remotes.serverUrl,
      DISPATCH_ALLOW_FILE_REMOTES: "true",
      DISPATCH_POLL_INTERVAL_MS: "100",
      // A crashed owner's delivery is taken over once its lease has run out.
      DISPATCH_LEASE_MS: "1500",
    };
  });
  afterAll(async () => {
    if (server) await stopServerProcess(server);
    await fake.stop();
    remotes.remove();
    await rm(dir, { recursive: true, force: true });
  });

  it("the next process handles the stored event: the run starts once", async () => {
    const ada = user("Ada");
    const team = fake.team("ENG", [ada.id]);
    const issue = fake.issue(team, { title: "Survive a crash", description: "$ echo survived" });
    const event = fake.created(issue, ada);
    const delivery = crypto.randomUUID();
    const dataDir = join(dir, "data");

    // The handler stops at its first question to Linear (the team's members): acknowledged, not handled.
    fake.hold("team");
    server = await startServerProcess({ dataDir, key, env });
    const { headers, body } = fake.signed(event, { delivery });
    const ack = await fetch(`${server.url}/linear/webhooks`, { method: "POST", headers, body });
    expect(ack.status).toBe(200);
    await waitFor(() => fake.heldCount("team") > 0, { what: "the handler to be under way" });
    expect(await listRuns(server)).toHaveLength(0);
    server.child.kill("SIGKILL");
    expect((await server.exited).signal).toBe("SIGKILL");

    fake.release();
    server = await startServerProcess({ dataDir, key, env });
    // Linear sends it again too (re-signed, the same delivery id): it changes nothing.
    const again = fake.signed(event, { delivery });
    const redelivered = await fetch(`${server.url}/linear/webhooks`, { method: "POST", ...again });
    expect(redelivered.status).toBe(200);

    const final = await waitFor(
      () => fake.activitiesOf(event.agentSession.id).find((a) => a.content.type === "response"),
      { what: "the run's final activity", timeoutMs: 60_000 },
    );
    expect(String(final.content.body)).toContain("Succeeded");
    const runs = await listRuns(server);
    expect(runs.filter((r) => r.trigger_url === issue.url)).toHaveLength(1);
    expect(
      fake.activitiesOf(event.agentSession.id).filter((a) => String(a.content.body).startsWith("On it")),
    ).toHaveLength(1);
  });
});

// biome-ignore lint/suspicious/noExplicitAny: test responses are asserted field by field
async function listRuns(server: ServerProcess): Promise<Array<Record<string, any>>> {
  const res = await server.api("GET", "/api/v1/agent/runs?limit=100");
  if (res.status !== 200) throw new Error(`listing runs: ${res.status} ${res.text}`);
  return res.body.runs;
}
