import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import {
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";
import { Browser, signInWithKey } from "../web/browser.ts";

const run = promisify(execFile);
const MAIN = new URL("../../src/main.ts", import.meta.url).pathname;

/** `dispatch <args>` as its own process, on the store that `env` names; its stdout. */
async function dispatchCli(args: string[], env: Record<string, string>): Promise<string> {
  const { stdout } = await run(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", DISPATCH_LOG_LEVEL: "warn", ...env },
  });
  return stdout;
}

/** A request with `key`: GET the run list, or POST a run. */
async function call(url: string, key: string, method: "GET" | "POST"): Promise<number> {
  const res = await fetch(`${url}/api/v1/agent/runs`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(method === "POST" ? { "content-type": "application/json" } : {}),
    },
    ...(method === "POST" ? { body: JSON.stringify({ prompt: "after the revocation" }) } : {}),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Whether `browser` is signed in: its dashboard has a sign-out button. */
async function signedIn(browser: Browser): Promise<boolean> {
  return (await browser.get("/")).html.includes(">Sign out</button>");
}

describe("a key revoked by another process, on one SQLite data directory", () => {
  let t: TestDispatch;
  beforeAll(async () => {
    t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
  });
  afterAll(() => t?.stop());

  it("is refused from the server's next request, and the web session opened with it ends", async () => {
    const member = await t.newKey("team_default");
    const admin = await t.newKey("team_default", { role: "admin" });
    // Both are known to the server (its cache holds them), and the admin is signed in to the web app.
    expect(await call(t.url, member, "GET")).toBe(200);
    expect(await call(t.url, member, "POST")).toBe(200);
    const browser = new Browser(t.url);
    expect((await signInWithKey(browser, admin)).status).toBe(303);
    expect(await signedIn(browser)).toBe(true);
    expect(await call(t.url, admin, "GET")).toBe(200);

    const env = { DISPATCH_DATA_DIR: t.dataDir };
    await dispatchCli(["keys", "revoke", member.slice(0, 10)], env);
    await dispatchCli(["keys", "revoke", admin.slice(0, 10)], env);

    expect(await call(t.url, member, "GET")).toBe(401);
    expect(await call(t.url, member, "POST")).toBe(401);
    expect(await call(t.url, admin, "GET")).toBe(401);
    expect(await signedIn(browser)).toBe(false);
  });
});

const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing) console.warn(`PostgreSQL key revocation tests SKIPPED: ${missing}`);

describe.skipIf(missing)("a key revoked on one replica, on one PostgreSQL database", () => {
  let cluster: PostgresCluster;
  let databaseUrl: string;
  const dataDirs: string[] = [];
  let a: ServerProcess;
  let b: ServerProcess;

  beforeAll(async () => {
    cluster = await startPostgres();
    databaseUrl = await cluster.createDatabase();
    const key = newAdminKey();
    for (let i = 0; i < 2; i++) dataDirs.push(await mkdtemp(join(tmpdir(), "dispatch-pg-revoke-")));
    const [first, second] = await Promise.all(
      dataDirs.map((dataDir) =>
        startServerProcess({
          dataDir,
          key,
          env: { DATABASE_URL: databaseUrl, DISPATCH_MAX_CONCURRENT_RUNS: "0" },
          args: ["--role", "api"],
          startTimeoutMs: 60_000,
        }),
      ),
    );
    [a, b] = [first!, second!];
  }, 120_000);

  afterAll(async () => {
    for (const server of [a, b]) if (server) await stopServerProcess(server);
    for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
    await cluster?.stop();
  }, 60_000);

  it("is refused by the other replica from its next request, and the web session opened with it ends", async () => {
    const env = { DATABASE_URL: databaseUrl, DISPATCH_DATA_DIR: dataDirs[0]! };
    const bot = (await dispatchCli(["keys", "create", "--principal", "ci-bot"], env)).trim();
    const admin = (await dispatchCli(["keys", "create", "--role", "admin"], env)).trim();
    for (const server of [a, b]) {
      expect(await call(server.url, bot, "GET")).toBe(200);
      expect(await call(server.url, bot, "POST")).toBe(200);
    }
    const browser = new Browser(b.url);
    expect((await signInWithKey(browser, admin)).status).toBe(303);
    expect(await signedIn(browser)).toBe(true);

    // Replica A deletes the identity, which revokes its key.
    const deleted = await a.api("DELETE", "/api/v1/agent/identities/ci-bot");
    expect(deleted.status, deleted.text).toBe(204);
    expect(await call(b.url, bot, "POST")).toBe(401);
    expect(await call(b.url, bot, "GET")).toBe(401);

    // Revoked by a third process (the CLI on the same database).
    await dispatchCli(["keys", "revoke", admin.slice(0, 10)], env);
    expect(await signedIn(browser)).toBe(false);
    expect(await call(b.url, admin, "GET")).toBe(401);
  });
});

describe.skipIf(missing)("creates on PostgreSQL, whose key is checked by the create's own statement", () => {
  let cluster: PostgresCluster;
  let databaseUrl: string;
  let t: TestDispatch;
  /** Another connection to the same database, as another replica or the CLI would have. */
  let elsewhere: PostgresStore;

  beforeAll(async () => {
    cluster = await startPostgres();
    databaseUrl = await cluster.createDatabase();
    t = await startTestDispatch({ DATABASE_URL: databaseUrl, DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    elsewhere = new PostgresStore(databaseUrl);
  }, 120_000);

  afterAll(async () => {
    await elsewhere?.close();
    await t?.stop();
    await cluster?.stop();
  }, 60_000);

  it("a key revoked at another connection creates nothing once its revocation committed", async () => {
    const member = await t.newKey("team_default");
    const before = await t.api("GET", "/api/v1/agent/runs?limit=100");
    // The server knows the key (its cache holds it) and has created with it.
    const first = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: "before" },
      { authorization: `Bearer ${member}` },
    );
    expect(first.status, first.text).toBe(200);

    expect(await elsewhere.revokeApiKey(member.slice(0, 10), new Date().toISOString())).toBeDefined();
    const refused = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: "after the revocation" },
      { authorization: `Bearer ${member}` },
    );
    expect(refused.status, refused.text).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    // The refused create forgot the key's cached caller: a read right after is refused too.
    const read = await t.api("GET", "/api/v1/agent/runs?limit=1", undefined, {
      authorization: `Bearer ${member}`,
    });
    expect(read.status, read.text).toBe(401);
    const continued = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: "and again", conversation_id: first.body.run_id },
      { authorization: `Bearer ${member}` },
    );
    expect(continued.status, continued.text).toBe(401);

    const after = await t.api("GET", "/api/v1/agent/runs?limit=100");
    expect(after.body.runs.length).toBe(before.body.runs.length + 1);
    const { events } = await t.dispatch.store.listAuditEvents("team_default", { limit: 100 });
    expect(events.filter((e) => e.action === "run.created").map((e) => e.target)).toEqual([
      first.body.run_id,
    ]);
  });

  it("creates sent at once each get their own run, first event and audit entry, exactly once", async () => {
    const key = await t.newKey("team_default");
    const prompts = Array.from({ length: 16 }, (_, i) => `together ${i}`);
    const answers = await Promise.all(
      prompts.map((prompt) =>
        t.api("POST", "/api/v1/agent/runs", { prompt }, { authorization: `Bearer ${key}` }),
      ),
    );
    for (const answer of answers) expect(answer.status, answer.text).toBe(200);
    const ids = answers.map((a) => a.body.run_id as string);
    expect(new Set(ids).size).toBe(prompts.length);
    for (const [i, id] of ids.entries()) {
      expect((await t.dispatch.store.getRun("team_default", id))?.prompt).toBe(prompts[i]);
      const events = await t.dispatch.store.listEvents(id, 0, 10);
      expect(events.map((e) => [e.seq, e.type])).toEqual([[1, "state"]]);
    }
    const { events } = await t.dispatch.store.listAuditEvents("team_default", { limit: 100 });
    const audited = events.filter((e) => e.action === "run.created" && ids.includes(e.target!));
    expect(audited.map((e) => e.target).sort()).toEqual([...ids].sort());
  });
});
