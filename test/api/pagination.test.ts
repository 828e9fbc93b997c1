import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

let t: TestDispatch;
const existing = new Set<string>();
beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0", DISPATCH_RATE_LIMIT_BURST: "100000" });
  // A few thousand runs, created through the API with bounded parallelism.
  const titles = ["alpha", "beta", "gamma", "delta"];
  for (let batch = 0; batch < 25; batch++) {
    const ids = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const res = await t.api("POST", "/api/v1/agent/runs", {
          prompt: `run ${batch}-${i}`,
          title: titles[i % 4],
        });
        return res.body.run_id as string;
      }),
    );
    for (const id of ids) existing.add(id);
  }
}, 120_000);
afterAll(() => t.stop());

describe("keyset pagination over HTTP", () => {
  for (const [sortBy, sortOrder] of [
    ["updated_at", "desc"],
    ["created_at", "asc"],
    ["title", "asc"],
    ["title", "desc"],
  ] as const) {
    it(`walks 2,500 runs by ${sortBy} ${sortOrder} with concurrent inserts: no duplicate, no gap`, async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      let inserting = true;
      // Inserts keep arriving while the walk goes on.
      const inserter = (async () => {
        let n = 0;
        while (inserting)
          await t.api("POST", "/api/v1/agent/runs", { prompt: `concurrent ${n++}`, title: "beta" });
      })();
      try {
        do {
          const qs = new URLSearchParams({ limit: "137", sort_by: sortBy, sort_order: sortOrder });
          if (cursor) qs.set("cursor", cursor);
          const res = await t.api("GET", `/api/v1/agent/runs?${qs}`);
          expect(res.status).toBe(200);
          seen.push(...res.body.runs.map((r: { run_id: string }) => r.run_id));
          expect(res.body.page_info.has_next_page).toBe(res.body.page_info.next_cursor !== undefined);
          cursor = res.body.page_info.next_cursor;
          pages++;
        } while (cursor);
      } finally {
        inserting = false;
        await inserter;
      }
      expect(pages).toBeGreaterThan(18);
      expect(new Set(seen).size).toBe(seen.length);
      const missing = [...existing].filter((id) => !seen.includes(id));
      expect(missing).toEqual([]);
    });
  }

  it("orders pages by the sort key with the run id as tie-breaker", async () => {
    const res = await t.api("GET", "/api/v1/agent/runs?limit=500&sort_by=title&sort_order=asc");
    const keys = res.body.runs.map((r: { title: string; run_id: string }) => [r.title, r.run_id]);
    const sorted = [...keys].sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1));
    expect(keys).toEqual(sorted);
  });

  it("cuts list prompts to 2,000 characters while GET returns them whole", async () => {
    const prompt = "p".repeat(5000);
    const id = (await t.api("POST", "/api/v1/agent/runs", { prompt, title: "zzz-long" })).body.run_id;
    const listed = (await t.api("GET", "/api/v1/agent/runs?q=zzz-long")).body.runs[0];
    expect(listed.run_id).toBe(id);
    expect(listed.prompt).toHaveLength(2000);
    expect((await t.api("GET", `/api/v1/agent/runs/${id}`)).body.prompt).toHaveLength(5000);
  });

  it("defaults to 20 runs, newest update first", async () => {
    const res = await t.api("GET", "/api/v1/agent/runs");
    expect(res.body.runs).toHaveLength(20);
    const updated = res.body.runs.map((r: { updated_at: string }) => r.updated_at);
    expect([...updated].sort().reverse()).toEqual(updated);
  });
});
