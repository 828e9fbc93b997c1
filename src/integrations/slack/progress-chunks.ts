import type { AnyChunk } from "@slack/types";
import type { RunEvent } from "../../model/run.ts";

/**
 * What Slack's agent surface shows of a run's transcript: the one line an assistant thread's status says
 * ("is running `npm test`…"), and the chunks a streamed message in a channel's thread is built of — one
 * task per tool call (in progress, then complete or error with the start of its output) and the agent's
 * plan as a plan title with one task per step. The agent's words stay on the transcript; here they are
 * only named. Text from the run is data: it goes into plain fields, never into markup of ours.
 */

const TITLE_CHARS = 150;
const OUTPUT_CHARS = 400;

/** The first line of `text`, cut to `max` characters. */
function line(text: string, max: number): string {
  const first = (text.split("\n")[0] ?? "").trim();
  return first.length > max ? `${first.slice(0, max - 1)}…` : first;
}

function inputOf(data: Record<string, unknown>): Record<string, unknown> {
  return (data.input && typeof data.input === "object" ? data.input : {}) as Record<string, unknown>;
}

/** What a tool call was given, in a few words: its command, path or pattern. */
function callSubject(data: Record<string, unknown>): string {
  const input = inputOf(data);
  const subject = [data.command, data.path, input.command, input.path, input.file_path, input.pattern].find(
    (v) => typeof v === "string" && v !== "",
  );
  return typeof subject === "string" ? line(subject, TITLE_CHARS) : "";
}

const PLAN_TOOLS = new Set(["update_plan", "TodoWrite"]);

/** An assistant thread's status while the agent works, from its latest event ("" when nothing to say). */
export function activityStatus(event: Pick<RunEvent, "type" | "data"> | undefined): string {
  if (!event) return "is starting…";
  const d = event.data;
  switch (event.type) {
    case "tool_call": {
      const tool = String(d.tool ?? "");
      if (PLAN_TOOLS.has(tool)) return "is updating its plan…";
      const subject = callSubject(d);
      if (/edit|write|patch/i.test(tool)) return subject ? `is editing ${subject}…` : "is editing files…";
      if (/read|list|search|glob|grep/i.test(tool)) return subject ? `is reading ${subject}…` : "is reading…";
      return subject ? `is running ${subject}…` : `is using ${line(tool, 40)}…`;
    }
    case "tool_result":
      return "is thinking…";
    case "message":
      return "is writing…";
    default:
      return "is working…";
  }
}

/** The plan of a plan tool's call (update_plan's {plan: [{step, status}]}, TodoWrite's {todos: [{content, status}]}). */
function planSteps(data: Record<string, unknown>): Array<{ text: string; status: string }> | undefined {
  if (!PLAN_TOOLS.has(String(data.tool ?? ""))) return undefined;
  const input = inputOf(data);
  const list = Array.isArray(input.plan) ? input.plan : Array.isArray(input.todos) ? input.todos : undefined;
  if (!list) return undefined;
  return list
    .filter((s): s is Record<string, unknown> => !!s && typeof s === "object")
    .map((s) => ({ text: String(s.step ?? s.content ?? ""), status: String(s.status ?? "pending") }))
    .filter((s) => s.text !== "");
}

const STEP_STATUS: Record<string, "pending" | "in_progress" | "complete"> = {
  pending: "pending",
  in_progress: "in_progress",
  completed: "complete",
};

/** A call's task id: its call id, else its event's sequence number (harnesses that name no calls run one at a time). */
export interface TaskIds {
  /** The task of the latest call without a call id, which the next result without one completes. */
  anonymous?: { id: string; title: string };
  /** Titles of the calls seen, by task id (a result's task keeps its call's title). */
  titles: Map<string, string>;
}

/** The chunks one transcript event adds to a streamed message (none for most events). */
export function chunksOf(event: RunEvent, tasks: TaskIds): AnyChunk[] {
  const d = event.data;
  const callId = typeof d.call_id === "string" && d.call_id ? d.call_id : undefined;
  if (event.type === "tool_call") {
    const steps = planSteps(d);
    if (steps) {
      const done = steps.filter((s) => s.status === "completed").length;
      return [
        { type: "plan_update", title: `Plan: ${done} of ${steps.length} done` },
        ...steps.map((s, i) => ({
          type: "task_update" as const,
          id: `plan-${i + 1}`,
          title: line(s.text, TITLE_CHARS),
          status: STEP_STATUS[s.status] ?? "pending",
        })),
      ];
    }
    const id = callId ?? `call-${event.seq}`;
    const subject = callSubject(d);
    const title = line(`${String(d.tool ?? "tool")}${subject ? ` ${subject}` : ""}`, TITLE_CHARS);
    tasks.titles.set(id, title);
    if (!callId) tasks.anonymous = { id, title };
    return [{ type: "task_update", id, title, status: "in_progress" }];
  }
  if (event.type === "tool_result") {
    if (PLAN_TOOLS.has(String(d.tool ?? ""))) return [];
    const id = callId ?? tasks.anonymous?.id;
    if (!id) return [];
    if (!callId) tasks.anonymous = undefined;
    const exit = typeof d.exit_code === "number" ? d.exit_code : undefined;
    const failed = d.error === true || d.timed_out === true || (exit !== undefined && exit !== 0);
    const output = String(d.output ?? "").trim();
    return [
      {
        type: "task_update",
        id,
        title: tasks.titles.get(id) ?? line(String(d.tool ?? "tool"), TITLE_CHARS),
        status: failed ? "error" : "complete",
        ...(exit !== undefined ? { details: `exit ${exit}` } : {}),
        ...(output
          ? { output: output.length > OUTPUT_CHARS ? `${output.slice(0, OUTPUT_CHARS - 1)}…` : output }
          : {}),
      },
    ];
  }
  return [];
}
