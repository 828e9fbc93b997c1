import type { RunEvent } from "@agent-dispatch/client";
import { describe, expect, it } from "vitest";
import { renderEvent, StatusLine, stylesFor } from "../../src/cli/transcript.ts";

const at = "2026-01-01T00:00:00.000Z";
const ev = (seq: number, type: string, data: Record<string, unknown>): RunEvent => ({ seq, at, type, data });

describe("renderEvent", () => {
  it("shows each event type as plain lines", () => {
    expect(renderEvent(ev(1, "state", { state: "QUEUED", previous: null }))).toBe("── QUEUED");
    expect(
      renderEvent(
        ev(2, "state", {
          state: "FAILED",
          status_message: { message: "Command `exit 3` exited with code 3" },
        }),
      ),
    ).toBe("── FAILED: Command `exit 3` exited with code 3");
    expect(renderEvent(ev(3, "message", { role: "user", text: "do it\n$ echo hi\n" }))).toBe(
      "> do it\n> $ echo hi",
    );
    expect(renderEvent(ev(4, "message", { role: "assistant", text: "done\n\n" }))).toBe("done");
    expect(renderEvent(ev(5, "tool_call", { tool: "shell", command: "echo hi" }))).toBe("$ echo hi");
    expect(renderEvent(ev(6, "tool_result", { command: "echo hi", exit_code: 0, output: "hi\n" }))).toBe(
      "hi",
    );
    expect(renderEvent(ev(7, "tool_result", { command: "exit 3", exit_code: 3, output: "" }))).toBe(
      "(exit 3)",
    );
    expect(renderEvent(ev(8, "tool_result", { exit_code: 0, output: "" }))).toBeUndefined();
    expect(renderEvent(ev(9, "followup", { message: "again", outcome: "live_session" }))).toBe(
      "> [follow-up] again",
    );
    expect(
      renderEvent(ev(10, "artifact", { artifact_type: "PULL_REQUEST", data: { url: "https://x/pr/1" } })),
    ).toBe("artifact PULL_REQUEST: https://x/pr/1");
    expect(renderEvent(ev(11, "error", { message: "worker lost" }))).toBe("error: worker lost");
    expect(renderEvent(ev(12, "something_new", { a: 1 }))).toBe('[something_new] {"a":1}');
  });

  it("styles only for a terminal that wants colour", () => {
    expect(stylesFor({ isTTY: false }).red("x")).toBe("x");
    expect(stylesFor({ isTTY: true }, { NO_COLOR: "1" }).red("x")).toBe("x");
    expect(stylesFor({ isTTY: true }, {}).red("x")).toBe("\x1b[31mx\x1b[39m");
  });
});

describe("StatusLine", () => {
  function fakeStream(isTTY: boolean) {
    const writes: string[] = [];
    const stream = { isTTY, write: (s: string) => writes.push(s) > 0 } as unknown as NodeJS.WriteStream;
    return { stream, writes };
  }

  it("draws a spinner with the state on a terminal and keeps it under what is written above", () => {
    const { stream, writes } = fakeStream(true);
    const line = new StatusLine(stream);
    line.start("connecting");
    line.state = "INPROGRESS";
    line.above(() => writes.push("TRANSCRIPT"));
    line.stop();
    // "\r" + erase-line is how the line is redrawn in place; shown as <clear> to keep the patterns legible
    const out = writes.join("").replaceAll("\r\x1b[2K", "<clear>");
    expect(out).toMatch(/^<clear>[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] connecting · 0s/);
    expect(out).toMatch(/connecting · 0s<clear>TRANSCRIPT<clear>[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] In progress · 0s/);
    expect(out.endsWith("<clear>")).toBe(true); // stop() leaves a clean line
  });

  it("writes nothing of its own off a terminal", () => {
    const { stream, writes } = fakeStream(false);
    const line = new StatusLine(stream);
    line.start("QUEUED");
    line.state = "INPROGRESS";
    line.above(() => writes.push("TRANSCRIPT"));
    line.stop();
    expect(writes).toEqual(["TRANSCRIPT"]);
  });
});
