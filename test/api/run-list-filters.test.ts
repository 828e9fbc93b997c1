import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

let t: TestDispatch;
const ids: Record<string, string> = {};
beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0", DISPATCH_RATE_LIMIT_BURST: "100000" });
  const make = async (key: string, body: Record<string, unknown>) => {
    const res = await t.api("POST", "/api/v1/agent/runs", { prompt: `run ${key}`, ...body });
    expect(res.status).toBe(200);
    ids[key] = res.body.run_id as string;
  };
  await make("both", { metadata: { ticket: "VIS-1", team: "web" }, config: { name: "beta" } });
  await make("one", { metadata: { ticket: "VIS-1" }, config: { name: "alpha" } });
  await make("none", { config: { name: "beta" } });
  await make("bare", {});
}, 60_000);
afterAll(() => t.stop());

const list = async (query: string) => t.api("GET", `/api/v1/agent/runs?${query}`);
const listed = async (query: string): Promise<string[]> => {
  const res = await list(`sort_by=created_at&sort_order=asc&${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.runs.map((r: { run_id: string }) => r.run_id);
};

describe("GET /agent/runs query parameters", () => {
  it("an unknown parameter is a 400 naming it, not a filter silently ignored", async () => {
    const res = await list("stat=QUEUED&limit=5");
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain("invalid_request");
    expect(res.body.detail).toContain("stat");
  });

  it("metadata[key]=value filters exactly, several pairs together", async () => {
    expect(await listed("metadata[ticket]=VIS-1")).toEqual([ids.both, ids.one]);
    expect(await listed("metadata[ticket]=VIS-1&metadata[team]=web")).toEqual([ids.both]);
    expect(await listed("metadata[ticket]=VIS")).toEqual([]);
    expect(await listed(`metadata${encodeURIComponent("[ticket]")}=VIS-1`)).toEqual([ids.both, ids.one]);
  });

  it("more than 5 metadata filters is a 400 saying the limit", async () => {
    const six = Array.from({ length: 6 }, (_, i) => `metadata[k${i}]=v`).join("&");
    const res = await list(six);
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain("at most 5");
    const five = Array.from({ length: 5 }, (_, i) => `metadata[k${i}]=v`).join("&");
    expect(await listed(five)).toEqual([]);
  });

  it("skill is an alias of skill_spec; both with different values is a 400", async () => {
    expect(await listed("skill=acme/tools:SKILL.md")).toEqual([]);
    const res = await list("skill=a/b:x&skill_spec=a/b:y");
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain("skill");
  });

  it("source repeats as any of; executor is the creator; execution_location REMOTE is every run", async () => {
    const all = [ids.both, ids.one, ids.none, ids.bare];
    expect(await listed("source=API")).toEqual(all);
    expect(await listed("source=SLACK&source=API")).toEqual(all);
    expect(await listed("source=SLACK&source=LINEAR")).toEqual([]);
    const creator = (await t.api("GET", `/api/v1/agent/runs/${ids.bare}`)).body.creator.uid as string;
    expect(await listed(`executor=${encodeURIComponent(creator)}`)).toEqual(all);
    expect(await listed("executor=nobody")).toEqual([]);
    expect(await listed("execution_location=REMOTE")).toEqual(all);
    expect(await listed("execution_location=LOCAL")).toEqual([]);
    expect((await list("execution_location=MOON")).status).toBe(400);
  });

  it("artifact_type, schedule_id and ancestor_run_id are accepted", async () => {
    expect(await listed("artifact_type=PULL_REQUEST")).toEqual([]);
    expect((await list("artifact_type=NOPE")).status).toBe(400);
    expect(await listed("schedule_id=sched-1")).toEqual([]);
    expect(await listed(`ancestor_run_id=${ids.bare}`)).toEqual([]);
    const missing = await list("ancestor_run_id=not-a-run");
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toContain("ancestor_run_id");
  });

  it("sort_by=agent orders by agent name, nameless last, and its cursor walks every page", async () => {
    for (const [order, expected] of [
      ["asc", ["one", "both", "none", "bare"]],
      ["desc", ["both", "none", "one", "bare"]],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const qs = new URLSearchParams({ limit: "1", sort_by: "agent", sort_order: order });
        if (cursor) qs.set("cursor", cursor);
        const res = await list(qs.toString());
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        seen.push(...res.body.runs.map((r: { run_id: string }) => r.run_id));
        cursor = res.body.page_info.next_cursor;
      } while (cursor);
      // Equal names ("beta" twice) fall back to id order, in the requested direction.
      const betas = [ids.both!, ids.none!].sort();
      if (order === "desc") betas.reverse();
      const want = expected.map((k) => ids[k]!);
      const at = order === "asc" ? 1 : 0;
      want.splice(at, 2, ...betas);
      expect(seen, order).toEqual(want);
    }
  });
});
