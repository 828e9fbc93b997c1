import type { RunEvent } from "../model/run.ts";

/**
 * A transcript read as turns rather than as a log: a tool call and its result are one item, usage is left
 * to the header's totals, and the plan the agent keeps is picked out of its plan tool's calls. Each item
 * has a key that stays the same when it is rendered again with more of the run (a call, then its result),
 * which is how the live page replaces what it already shows.
 */
export type TranscriptItem =
  | { kind: "event"; key: string; seq: number; event: RunEvent }
  | { kind: "tool"; key: string; seq: number; call?: RunEvent; result?: RunEvent; plan?: PlanStep[] };

export interface PlanStep {
  text: string;
  status: "pending" | "in_progress" | "completed";
}

/** What one model call used, from its usage event. */
export interface StepUsage {
  seq: number;
  tokens: number;
  /** Absent when the model has no price here. */
  costUsd?: number;
}

/** Reads events in order into items; the last plan and the usage events come out on the side. */
export class TurnBuilder {
  readonly items: TranscriptItem[] = [];
  plan: { seq: number; steps: PlanStep[] } | undefined;
  readonly usage: StepUsage[] = [];
  /** The sequence number of the latest execution's start (its In progress state) among the events read. */
  executionFrom = 0;
  /** Events read (usage included), for the page's budget and its links. */
  events = 0;
  /** Calls waiting for their result, by call id. */
  private readonly open = new Map<string, Extract<TranscriptItem, { kind: "tool" }>>();
  /** The latest call without an id still waiting: a harness that names no calls runs one at a time. */
  private anonymous: Extract<TranscriptItem, { kind: "tool" }> | undefined;

  add(event: RunEvent): TranscriptItem | undefined {
    this.events += 1;
    const callId = typeof event.data.call_id === "string" ? event.data.call_id : undefined;
    switch (event.type) {
      case "usage":
        // Shown as the header's numbers (tokens, cost), never as a transcript line.
        this.usage.push(usageOf(event));
        return undefined;
      case "tool_call": {
        const plan = planOf(event);
        const item = {
          kind: "tool" as const,
          key: callId ? `call-${callId}` : `ev-${event.seq}`,
          seq: event.seq,
          call: event,
          ...(plan ? { plan } : {}),
        };
        if (plan) this.plan = { seq: event.seq, steps: plan };
        if (callId) this.open.set(callId, item);
        else this.anonymous = item;
        this.items.push(item);
        return item;
      }
      case "tool_result": {
        const call = callId ? this.open.get(callId) : this.anonymous;
        if (call && call.call?.data.tool === event.data.tool) {
          call.result = event;
          if (callId) this.open.delete(callId);
          else this.anonymous = undefined;
          return call;
        }
        // Its call is on an earlier page (or the harness gave no id): the result stands alone.
        const item = { kind: "tool" as const, key: `ev-${event.seq}`, seq: event.seq, result: event };
        this.items.push(item);
        return item;
      }
      default: {
        if (event.type === "state" && event.data.state === "INPROGRESS") this.executionFrom = event.seq;
        const item = { kind: "event" as const, key: `ev-${event.seq}`, seq: event.seq, event };
        this.items.push(item);
        return item;
      }
    }
  }

  /** Whether a call read so far still waits for its result. */
  get waiting(): boolean {
    return this.open.size > 0 || this.anonymous !== undefined;
  }
}

function usageOf(event: RunEvent): StepUsage {
  const d = event.data;
  const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const tokens = n(d.total_tokens) || n(d.input_tokens) + n(d.output_tokens);
  const cost = typeof d.cost_usd === "number" && Number.isFinite(d.cost_usd) ? d.cost_usd : undefined;
  return { seq: event.seq, tokens, ...(cost !== undefined ? { costUsd: cost } : {}) };
}

/**
 * The steps of a plan tool's call: the builtin agent's and Codex's `update_plan` ({plan: [{step,
 * status}]}) and Claude Code's `TodoWrite` ({todos: [{content, status}]}); undefined for any other call.
 */
export function planOf(call: Pick<RunEvent, "data">): PlanStep[] | undefined {
  const d = call.data;
  const input = (d.input && typeof d.input === "object" ? d.input : {}) as Record<string, unknown>;
  const list = d.tool === "update_plan" ? input.plan : d.tool === "TodoWrite" ? input.todos : undefined;
  if (!Array.isArray(list)) return undefined;
  const steps: PlanStep[] = [];
  for (const entry of list) {
    if (!entry || typeof entry !== "object") continue;
    const e = entry as Record<string, unknown>;
    const text = typeof e.step === "string" ? e.step : typeof e.content === "string" ? e.content : "";
    if (!text) continue;
    const status = e.status === "completed" || e.status === "in_progress" ? e.status : "pending";
    steps.push({ text, status });
  }
  return steps.length ? steps : undefined;
}
