import { expect, it } from "vitest";
import type { StoreSuite } from "./suite.ts";

export function eventsConformance(t: StoreSuite): void {
  const { create } = t;

  it("appends transcript events with consecutive sequence numbers", async () => {
    const run = await create();
    await Promise.all(Array.from({ length: 20 }, (_, i) => t.store.appendEvent(run.id, "log", { i })));
    const events = await t.store.listEvents(run.id, 0, 1000);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect((await t.store.listEvents(run.id, 5, 3)).map((e) => e.seq)).toEqual([6, 7, 8]);
  });
}
