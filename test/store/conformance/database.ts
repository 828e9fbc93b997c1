import { expect, it } from "vitest";
import type { StoreSuite } from "./suite.ts";

export function databaseConformance(t: StoreSuite): void {
  it("migrations are idempotent", async () => {
    await t.store.migrate();
    await t.store.migrate();
    expect(await t.store.countActiveRuns(10)).toBe(0);
  });
}
