/**
 * What a test scripts for the fake model server (./server.ts): the agent's turns, one per model call that
 * offers tools, whichever provider's wire format the call came in.
 */
export interface ScriptedTurn {
  text?: string;
  /** `input` may be a function: evaluated when the turn is answered (after its gate), e.g. to name a path. */
  calls?: Array<{ name: string; input: ToolInput | (() => ToolInput) }>;
  /** Reported as each provider reports usage; 100 input and 20 output tokens when left out. */
  usage?: Usage;
  /** The answer waits for it: a test releases it once it has done something mid-turn. */
  gate?: Promise<void>;
  /** Streams the first half of its text and then never ends (until the client goes away): cancel mid-stream. */
  stall?: boolean;
}

/** A function call's arguments, or a custom (freeform) tool's text input (OpenAI Responses only). */
export type ToolInput = Record<string, unknown> | string;

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

/** A turn's calls with their inputs evaluated, as every wire format sends them. */
export interface ToolCall {
  name: string;
  input: ToolInput;
}

export function usageOf(turn: ScriptedTurn): Usage {
  return turn.usage ?? { input_tokens: 100, output_tokens: 20 };
}

export function callsOf(turn: ScriptedTurn): ToolCall[] {
  return (turn.calls ?? []).map((c) => ({
    name: c.name,
    input: typeof c.input === "function" ? c.input() : c.input,
  }));
}

/** The text split in two deltas: a stalled turn sends the first and stops there. */
export function halves(text: string): [string, string] {
  const half = Math.ceil(text.length / 2);
  return [text.slice(0, half), text.slice(half)];
}
