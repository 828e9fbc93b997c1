import type { RunEvent } from "@agent-dispatch/client";
import { stateWord } from "../model/run-wording.ts";

/**
 * How the CLI shows a run's transcript: one event → zero or more plain lines, readable in a terminal,
 * a CI log or a file alike. A terminal also gets dim/bold styling and a live status line (StatusLine).
 */
export interface Styles {
  dim: (s: string) => string;
  bold: (s: string) => string;
  red: (s: string) => string;
  green: (s: string) => string;
}

const PLAIN: Styles = { dim: (s) => s, bold: (s) => s, red: (s) => s, green: (s) => s };
const ANSI: Styles = {
  dim: (s) => `\x1b[2m${s}\x1b[22m`,
  bold: (s) => `\x1b[1m${s}\x1b[22m`,
  red: (s) => `\x1b[31m${s}\x1b[39m`,
  green: (s) => `\x1b[32m${s}\x1b[39m`,
};

export function stylesFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Styles {
  return stream.isTTY && !env.NO_COLOR && env.TERM !== "dumb" ? ANSI : PLAIN;
}

export function renderEvent(event: RunEvent, s: Styles = PLAIN): string | undefined {
  const d = event.data as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" ? v : v === undefined ? "" : JSON.stringify(v));
  switch (event.type) {
    case "state": {
      const state = str(d.state);
      const status = d.status_message as { message?: string } | undefined;
      const colour = state === "SUCCEEDED" ? s.green : ["FAILED", "ERROR"].includes(state) ? s.red : s.dim;
      return colour(`── ${state}${status?.message ? `: ${status.message}` : ""}`);
    }
    case "message": {
      const text = str(d.text).replace(/\n+$/, "");
      return d.role === "user" ? s.dim(prefixLines(text, "> ")) : text;
    }
    case "followup":
      return s.dim(prefixLines(`[follow-up] ${str(d.message)}`, "> "));
    case "tool_call":
      return s.bold(
        d.tool === "shell" ? `$ ${str(d.command)}` : `→ ${str(d.tool)} ${str(d.input ?? d.args)}`,
      );
    case "tool_result": {
      const output = str(d.output).replace(/\n+$/, "");
      const notes = [
        typeof d.exit_code === "number" && d.exit_code !== 0 ? `exit ${d.exit_code}` : "",
        d.signal ? `killed by ${str(d.signal)}` : "",
        d.timed_out ? "timed out" : "",
        d.truncated ? "output truncated" : "",
      ].filter(Boolean);
      const tail = notes.length ? s.red(`(${notes.join(", ")})`) : "";
      return [output, tail].filter(Boolean).join("\n") || undefined;
    }
    case "artifact": {
      const data = (d.data ?? {}) as Record<string, unknown>;
      return `artifact ${str(d.artifact_type)}: ${str(data.url ?? data.path ?? data)}`;
    }
    case "usage":
      return s.dim(`usage: ${str(d.total_tokens ?? d)} tokens`);
    case "error":
      return s.red(`error: ${str(d.message ?? d)}`);
    case "log":
      return s.dim(str(d.message ?? d.text ?? d));
    default:
      return s.dim(`[${event.type}] ${JSON.stringify(d)}`);
  }
}

function prefixLines(text: string, prefix: string): string {
  return text
    .split("\n")
    .map((line) => prefix + line)
    .join("\n");
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * The live state under the transcript on a terminal: a spinner, the state in words and the time since the
 * follow started, redrawn in place. Off a terminal it is silent (state changes are transcript lines).
 */
export class StatusLine {
  readonly #stream: NodeJS.WriteStream;
  readonly #enabled: boolean;
  readonly #started = Date.now();
  #state = "";
  #frame = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #shown = false;

  constructor(stream: NodeJS.WriteStream, enabled = Boolean(stream.isTTY)) {
    this.#stream = stream;
    this.#enabled = enabled;
  }

  start(state: string): void {
    this.#state = state;
    if (!this.#enabled || this.#timer) return;
    this.#timer = setInterval(() => this.#draw(), 100);
    this.#timer.unref?.();
    this.#draw();
  }

  /** Shown from the next redraw (the next `above()` or spinner frame). */
  set state(state: string) {
    this.#state = state;
  }

  /** Writes above the status line: clear it, write, redraw. */
  above(write: () => void): void {
    this.#clear();
    write();
    this.#draw();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#clear();
  }

  #draw(): void {
    if (!this.#timer) return;
    this.#frame = (this.#frame + 1) % FRAMES.length;
    const seconds = Math.floor((Date.now() - this.#started) / 1000);
    this.#stream.write(`\r\x1b[2K${FRAMES[this.#frame]} ${stateWord(this.#state)} · ${seconds}s`);
    this.#shown = true;
  }

  #clear(): void {
    if (!this.#shown) return;
    this.#stream.write("\r\x1b[2K");
    this.#shown = false;
  }
}
