import { describe, expect, it } from "vitest";
import type { RunRecord } from "../../../src/model/run.ts";
import type { IdempotencyClaim } from "../../../src/store/store.ts";
import type { StoreSuite } from "./suite.ts";

export function idempotencyConformance(t: StoreSuite): void {
  const { newRun } = t;

  describe("idempotency", () => {
    const claim = (hash: string, notBefore = "1970-01-01T00:00:00.000Z"): IdempotencyClaim => ({
      principalId: "p1",
      key: "k1",
      requestHash: hash,
      respond: (value) => ({ id: (value as RunRecord).id }),
      notBefore,
    });

    it("replays the remembered response for the same request and refuses another request", async () => {
      const first = await t.store.createRun(newRun(), claim("h1"));
      expect(first.kind).toBe("created");
      const again = await t.store.createRun(newRun(), claim("h1"));
      expect(again).toEqual({
        kind: "replayed",
        response: first.kind === "created" ? first.response : null,
      });
      expect(await t.store.createRun(newRun(), claim("h2"))).toEqual({ kind: "key_reused" });
      expect(await t.store.countActiveRuns(10)).toBe(1);
    });

    it("recalls an answer remembered on its own, for the same request only, within the window", async () => {
      const own = (hash: string, notBefore?: string) => ({ ...claim(hash, notBefore), key: "answer" });
      expect(await t.store.recallIdempotency(own("h1"))).toBeUndefined();
      expect(
        await t.store.rememberIdempotency({ ...own("h1"), respond: (v) => v }, { state: "INPROGRESS" }),
      ).toEqual({
        state: "INPROGRESS",
      });
      expect(await t.store.recallIdempotency(own("h1"))).toEqual({
        kind: "replayed",
        response: { state: "INPROGRESS" },
      });
      expect(await t.store.recallIdempotency(own("h2"))).toEqual({ kind: "key_reused" });
      expect(
        await t.store.recallIdempotency(own("h1", new Date(Date.now() + 1000).toISOString())),
      ).toBeUndefined();
    });

    it("forgets records older than the window", async () => {
      await t.store.createRun(newRun(), claim("h1"));
      const later = await t.store.createRun(newRun(), claim("h2", new Date(Date.now() + 1000).toISOString()));
      expect(later.kind).toBe("created");
    });
  });
}
