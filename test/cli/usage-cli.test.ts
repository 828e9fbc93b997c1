import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliFor } from "../support/cli.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model/server.ts";

// `dispatch usage` as a user runs it: a child process of src/main.ts configured only by DISPATCH_BASE_URL
// and DISPATCH_API_KEY, against a live server whose runs called a loopback model, one priced, one not.

const NO_STACK = /^\s+at /m;
const PRICED = "openai-compatible/fake-coder";
const UNPRICED = "openai-compatible/gpt-fake";

let t: TestDispatch;
let fake: FakeModel;
let configDir: string;

beforeAll(async () => {
  fake = await startFakeModel([]);
  configDir = await mkdtemp(join(tmpdir(), "dispatch-config-"));
  const configFile = join(configDir, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({ prices: { [PRICED]: { input_per_mtok: 1, output_per_mtok: 2 } } }),
  );
  t = await startTestDispatch({
    DISPATCH_CONFIG_FILE: configFile,
    OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl("openai"),
  });
  for (const model of [PRICED, PRICED, UNPRICED]) {
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "Say hello",
      config: { model_id: model },
    });
    expect(res.status, res.text).toBe(200);
    await waitForState(t, res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 60_000);
  }
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await fake?.close();
  await rm(configDir, { recursive: true, force: true });
});

const dispatch = cliFor(() => t);

/** Yesterday to tomorrow (UTC dates): every run of the test, whenever it runs. */
const DAY_MS = 24 * 3600_000;
const PERIOD = [
  "--from",
  new Date(Date.now() - DAY_MS).toISOString().slice(0, 10),
  "--to",
  new Date(Date.now() + DAY_MS).toISOString().slice(0, 10),
];

describe("dispatch usage", () => {
  it("prints the month's spend by person and model, with a total and what has no price", async () => {
    const out = await dispatch(["usage", ...PERIOD, "--by", "person,model"]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^From \d{4}-\d\d-\d\dT00:00:00\.000Z to \d{4}-\d\d-\d\dT00:00:00\.000Z:$/m);
    expect(out.stdout).toMatch(/^PERSON\s+MODEL\s+RUNS\s+INPUT\s+OUTPUT\s+COST$/m);
    expect(out.stdout).toMatch(
      new RegExp(`^Admin\\s+${PRICED}\\s+2\\s+[\\d,]+\\s+[\\d,]+\\s+<\\$0\\.01$`, "m"),
    );
    expect(out.stdout).toMatch(
      new RegExp(`^Admin\\s+${UNPRICED}\\s+1\\s+.*\\$0\\.00 \\+ 1 run without a price$`, "m"),
    );
    expect(out.stdout).toMatch(/^TOTAL\s+3\s+.*<\$0\.01 \+ 1 run without a price$/m);
  });

  it("--csv prints the server's CSV; --json its report", async () => {
    const csv = await dispatch(["usage", ...PERIOD, "--by", "model", "--csv"]);
    expect(csv.code, csv.stderr).toBe(0);
    const lines = csv.stdout.split("\r\n");
    expect(lines[0]).toBe(
      "model,runs,input_tokens,output_tokens,cost_usd,known_cost_usd,unpriced_runs,from,to",
    );
    expect(lines[1]).toMatch(new RegExp(`^${PRICED},2,`));
    expect(lines[2]).toMatch(new RegExp(`^${UNPRICED},1,\\d+,\\d+,,0,1,`));
    const json = JSON.parse((await dispatch(["usage", ...PERIOD, "--json"])).stdout);
    expect(json.totals).toMatchObject({ runs: 3, cost_usd: null, unpriced_runs: 1 });
  });

  it("says what was wrong with a period or a key, without a stack", async () => {
    const bad = await dispatch(["usage", "--by", "team"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/unknown key "team"; group by any of person, .* \(HTTP 400 invalid_request\)/);
    const backwards = await dispatch(["usage", "--from", "2026-03-02", "--to", "2026-03-01"]);
    expect(backwards.stderr).toMatch(/give from before to/);
    const typo = await dispatch(["usage", "--form", "2026-03-01"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("dispatch usage [--from D]");
    for (const out of [bad, backwards, typo]) expect(out.stderr).not.toMatch(NO_STACK);
  });
});
