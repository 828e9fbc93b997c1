import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/auth/api-keys.ts";
import { SESSION_COOKIE } from "../../src/web/auth/cookies.ts";
import { hashToken, newToken } from "../../src/web/auth/secrets.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { Browser, csrfOf, type Page, signInWithKey } from "./browser.ts";

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

/**
 * A run that waits for budget, on the run page (docs/api.md "Budgets"): the page says "Waiting for you" with
 * what it spent and needs, an Extend form (the amount: what it needs, rounded up to a whole dollar) and Stop
 * here; the person answers as themself, so past their own monthly budget they are refused in the API's
 * words (with the form to try again) and an admin extends. The builtin harness against a loopback
 * Anthropic API that reports usage ($3 / $15 per million tokens).
 */

const SONNET = "anthropic/claude-sonnet-4-5";
/** One step at $0.063 (15,000 input, 1,200 output tokens). */
const STEP = { input_tokens: 15_000, output_tokens: 1200 };
const turns: ScriptedTurn[] = [];
let model: FakeModel;
let t: TestDispatch;
let configDir: string;
let admin: Browser;

beforeAll(async () => {
  model = await startFakeModel(turns);
  configDir = await mkdtemp(join(tmpdir(), "dispatch-budget-page-"));
  const configFile = join(configDir, "dispatch.config.yaml");
  await writeFile(configFile, "budgets:\n  people:\n    mona@example.com: 0.02\n");
  t = await startTestDispatch({
    ANTHROPIC_API_KEY: "test-anthropic-key",
    ANTHROPIC_BASE_URL: model.baseUrl("anthropic"),
    DISPATCH_CONFIG_FILE: configFile,
    DISPATCH_POLL_INTERVAL_MS: "100",
  });
  admin = new Browser(t.url);
  expect((await signInWithKey(admin, t.key)).status).toBe(303);
});
afterAll(async () => {
  await t?.stop();
  await model?.close();
  await rm(configDir, { recursive: true, force: true });
});
// Each test scripts its own turns: none left over from another.
beforeEach(() => {
  turns.length = 0;
});

const gateOf = (page: Page) => /<section id="gate"[\s\S]*?<\/section>/.exec(page.html)?.[0] ?? "";
const formPosting = (page: Page, action: string) =>
  new RegExp(`<form method="post" action="${action}">([\\s\\S]*?)</form>`).exec(page.html)?.[1];

/** A web session of a member's key (signing in with a key is for admins; people sign in from a surface). */
async function memberSession(key: string): Promise<Browser> {
  const caller = await t.dispatch.store.findCallerByKeyHash(hashApiKey(key));
  const sessionId = newToken();
  await t.dispatch.store.createKeyWebSession({
    idHash: hashToken(sessionId),
    csrfToken: newToken(),
    createdAt: new Date().toISOString(),
    expiresAt: new Date(Date.now() + 3600_000).toISOString(),
    principalId: caller!.principal.id,
    teamId: caller!.team.id,
    role: "member",
    apiKeyId: caller!.key.id,
  });
  const browser = new Browser(t.url);
  browser.cookies.set(SESSION_COOKIE, sessionId);
  return browser;
}

/** Starts a run (as `key`) and waits for it to wait for budget. */
async function waitingRun(prompt: string, config: Json, key = t.key): Promise<string> {
  const created = await t.api(
    "POST",
    "/api/v1/agent/runs",
    { prompt, config: { model_id: SONNET, ...config } },
    { authorization: `Bearer ${key}` },
  );
  expect(created.status, created.text).toBe(200);
  const run = await waitForState(t, created.body.run_id, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"], 30_000);
  expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
  expect(run.status_message.reason).toBe("awaiting_budget");
  return run.run_id;
}

describe("web run page of a run waiting for budget", () => {
  it("shows Extend (what it needs, rounded up) and Stop here; a bad amount is refused with the form; Extend continues the run", async () => {
    turns.push(
      { calls: [{ name: "shell", input: { command: "echo one" } }], usage: STEP },
      { text: "Finished after the extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const runId = await waitingRun("Refactor the parser", { max_cost_usd: 0.05 });
    const page = await admin.get(`/runs/${runId}`);
    const gate = gateOf(page);
    expect(gate).toContain('<h2 id="gate-h">Waiting for you: more budget</h2>');
    expect(gate).toContain("has cost $0.063");
    const extend = formPosting(page, `/runs/${runId}/extend`);
    expect(extend).toContain('name="csrf"');
    expect(extend).toMatch(/<input type="number" id="extend-amount" name="amount_usd"[^>]* value="1">/);
    expect(formPosting(page, `/runs/${runId}/stop`)).toContain('id="stop-budget"');
    expect(gate).toContain(`<form method="get" action="/runs/${runId}/cancel">`);

    const bad = await admin.post(`/runs/${runId}/extend`, { csrf: csrfOf(page), amount_usd: "0" });
    expect(bad.status).toBe(400);
    expect(bad.html).toContain("amount_usd must be more than 0 US dollars");
    expect(bad.html).toMatch(/id="extend-amount"[^>]* value="0"/);
    expect((await t.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("BLOCKED");

    const extended = await admin.post(`/runs/${runId}/extend`, { csrf: csrfOf(page), amount_usd: "2" });
    expect(extended.status, extended.html).toBe(303);
    expect(extended.location).toBe(`/runs/${runId}?done=extended`);
    const done = await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect(done.budget.extended_usd).toBeCloseTo(2.013, 6);
    const after = await admin.get(extended.location!);
    expect(after.html).toContain("Budget extended: the run continues.");
    expect(after.html).toContain('<section id="gate" data-key="" hidden></section>');

    // Nothing waits any more: said in the API's words.
    const again = await admin.post(`/runs/${runId}/stop`, { csrf: csrfOf(after) });
    expect(again.status).toBe(409);
    expect(again.html).toContain("is not waiting for budget");
  });

  it("Stop here ends the run with what it has, without another model call", async () => {
    turns.push({ calls: [{ name: "shell", input: { command: "echo two" } }], usage: STEP });
    const runId = await waitingRun("Tidy the imports", { max_cost_usd: 0.05 });
    turns.length = 0;
    const calls = model.agentRequests().length;
    const page = await admin.get(`/runs/${runId}`);
    const stopped = await admin.post(`/runs/${runId}/stop`, { csrf: csrfOf(page) });
    expect(stopped.status, stopped.html).toBe(303);
    expect(stopped.location).toBe(`/runs/${runId}?done=stopped`);
    const ended = await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(ended.state).toBe("SUCCEEDED");
    expect(ended.status_message.message).toContain("Stopped at its budget by");
    expect(model.agentRequests().length).toBe(calls);
  });

  it("past the person's own monthly budget their Extend is refused with the reason; an admin's goes through", async () => {
    turns.push(
      { calls: [{ name: "shell", input: { command: "echo three" } }], usage: STEP },
      { text: "Done with the admin's extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const mona = await t.newKey("team_default", { displayName: "Mona", email: "mona@example.com" });
    const runId = await waitingRun("Write the changelog", {}, mona);
    const hers = await memberSession(mona);
    const page = await hers.get(`/runs/${runId}`);
    const refused = await hers.post(`/runs/${runId}/extend`, { csrf: csrfOf(page), amount_usd: "1" });
    expect(refused.status).toBe(403);
    expect(refused.html).toContain("only an admin may extend beyond it");
    expect(refused.html).toContain('id="extend-amount"');
    expect((await t.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("BLOCKED");

    const mine = await admin.get(`/runs/${runId}`);
    const extended = await admin.post(`/runs/${runId}/extend`, { csrf: csrfOf(mine), amount_usd: "1" });
    expect(extended.status, extended.html).toBe(303);
    const done = await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
  });
});
