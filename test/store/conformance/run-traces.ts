import { describe, expect, it } from "vitest";
import type { StoreSuite } from "./suite.ts";

export function runTracesConformance(t: StoreSuite): void {
  describe("run traces", () => {
    it("keeps the span of the request that created a run, written with the run", async () => {
      const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      const run = t.newRun();
      await t.store.createRun(run, undefined, [], { traceparent });
      expect(await t.store.getRunTrace(run.id)).toBe(traceparent);
      expect(await t.store.getRunTrace((await t.create()).id)).toBeUndefined();
    });
  });
}
