import { expect, it } from "vitest";
import { EVENT_DATA_MAX_BYTES } from "../../../src/store/event-cap.ts";
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

  it("stores an event's data cut to the cap, saying so, with the beginning and end of long text", async () => {
    const run = await create();
    // 5 MB of tool output whose first and last lines are distinct, plus the short fields around it.
    const output = `FIRST LINE\n${"é0123456789".repeat(450_000)}\nLAST LINE`;
    const given = { tool: "shell", exit_code: 0, output };
    const appended = await t.store.appendEvent(run.id, "tool_result", given);
    const [stored] = await t.store.listEvents(run.id, appended.seq - 1, 1);
    expect(stored).toEqual(appended);
    const data = stored!.data as { tool: string; exit_code: number; output: string; truncated: boolean };
    expect(Buffer.byteLength(JSON.stringify(data))).toBeLessThanOrEqual(EVENT_DATA_MAX_BYTES);
    expect(data).toMatchObject({
      tool: "shell",
      exit_code: 0,
      truncated: true,
      original_bytes: Buffer.byteLength(JSON.stringify(given)),
    });
    expect(data.output.startsWith("FIRST LINE\né0123")).toBe(true);
    expect(data.output.endsWith("6789\nLAST LINE")).toBe(true);
    expect(data.output).toMatch(/\[truncated by Dispatch: \d+ of \d+ characters cut\]/);
    // Most of the room goes to the text, not to the note.
    expect(data.output.length).toBeGreaterThan(EVENT_DATA_MAX_BYTES / 4);

    // Within the cap, data is stored as given.
    const small = { role: "assistant", text: "x".repeat(EVENT_DATA_MAX_BYTES / 2) };
    const kept = await t.store.appendEvent(run.id, "message", small);
    expect((await t.store.listEvents(run.id, kept.seq - 1, 1))[0]!.data).toEqual(small);
  });

  it("caps data that has no single long string", async () => {
    const run = await create();
    const items = Array.from({ length: 50_000 }, (_, i) => i);
    const appended = await t.store.appendEvent(run.id, "tool_call", { tool: "mcp", input: { items } });
    const [stored] = await t.store.listEvents(run.id, appended.seq - 1, 1);
    expect(Buffer.byteLength(JSON.stringify(stored!.data))).toBeLessThanOrEqual(EVENT_DATA_MAX_BYTES);
    expect(stored!.data).toMatchObject({ truncated: true });
    expect(String(stored!.data.text)).toMatch(/^\{"tool":"mcp","input":\{"items":\[0,1,2,/);
  });
}
