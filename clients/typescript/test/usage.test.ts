import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../../../test/support/dispatch.ts";
import { type FakeModel, startFakeModel } from "../../../test/support/fake-model/server.ts";
import { BadRequestError, Dispatch, DispatchError } from "../src/index.ts";

// client.usage against a live Dispatch whose run called a priced loopback model.

const MODEL = "openai-compatible/fake-coder";
let t: TestDispatch;
let fake: FakeModel;
let configDir: string;
let client: Dispatch;
let runId: string;

beforeAll(async () => {
  fake = await startFakeModel([]);
  configDir = await mkdtemp(join(tmpdir(), "dispatch-config-"));
  const configFile = join(configDir, "dispatch.config.yaml");
  await writeFile(
    configFile,
    JSON.stringify({ prices: { [MODEL]: { input_per_mtok: 1, output_per_mtok: 2 } } }),
  );
  t = await startTestDispatch({
    DISPATCH_CONFIG_FILE: configFile,
    OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl("openai"),
  });
  client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1`, maxRetries: 0 });
  runId = (await client.runs.create({ prompt: "Say hello", config: { model_id: MODEL } })).run_id;
  await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 60_000);
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await fake?.close();
  await rm(configDir, { recursive: true, force: true });
});

describe("client.usage", () => {
  const period = { from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 3_600_000) };

  it("retrieve: the period's spend grouped by model, as the run recorded it", async () => {
    const run = await client.runs.retrieve(runId);
    const report = await client.usage.retrieve({ ...period, groupBy: ["model", "person"] });
    expect(report.group_by).toEqual(["model", "person"]);
    expect(report.rows).toEqual([
      {
        model: MODEL,
        person: run.creator?.uid,
        person_name: run.creator?.display_name,
        runs: 1,
        input_tokens: run.request_usage?.input_tokens,
        output_tokens: run.request_usage?.output_tokens,
        cost_usd: run.request_usage?.inference_cost,
        known_cost_usd: run.request_usage?.inference_cost,
        unpriced_runs: 0,
      },
    ]);
    expect(report.totals.runs).toBe(1);
  });

  it("csv: the rows with a header row", async () => {
    const csv = await client.usage.csv({ ...period, groupBy: ["model"] });
    expect(csv.split("\r\n")[0]).toBe(
      "model,runs,input_tokens,output_tokens,cost_usd,known_cost_usd,unpriced_runs,from,to",
    );
    expect(csv.split("\r\n")[1]).toMatch(new RegExp(`^${MODEL},1,`));
  });

  it("a period backwards is a BadRequestError naming the fix; a string of keys is refused before sending", async () => {
    const backwards = client.usage.retrieve({ from: "2026-03-02", to: "2026-03-01" });
    await expect(backwards).rejects.toBeInstanceOf(BadRequestError);
    await expect(backwards).rejects.toThrow(/give from before to/);
    expect(() => client.usage.retrieve({ groupBy: "person" as never })).toThrow(DispatchError);
  });
});
