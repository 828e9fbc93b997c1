import type { ModelMessage, ToolModelMessage, UserModelMessage } from "ai";
import type { RequestUsage, RunEvent } from "../../model/run.ts";
import { formatForModel, type ToolOutput } from "./tools/tool-output.ts";
import type { TurnImages } from "./turn-images.ts";

/**
 * Rebuilds the conversation from a run's transcript, so that a follow-up execution continues where the
 * last one stopped: the prompt, follow-ups, assistant messages, tool calls and their results.
 *
 * Events the builtin harness writes carry `step` (one id per model call) and `call_id`; a step becomes
 * one assistant message plus one tool message. A follow-up joins the conversation at the first step
 * boundary after it was posted, which is where steering delivered it (one the agent had not taken when
 * its turn ended is this execution's input and comes last). A tool call without a result (the
 * run was cancelled while it ran) gets a result saying so, so providers accept the history.
 */
export function historyFromTranscript(
  events: RunEvent[],
  input: string[],
  images?: TurnImages,
): ModelMessage[] {
  const messages: ModelMessage[] = [];
  let pendingUsers: UserModelMessage[] = [];
  const followups = new Set<ModelMessage>();
  let step: { id: string; assistant: AssistantPart[]; results: ToolResults } | undefined;

  const flushStep = () => {
    if (!step) return;
    const calls = step.assistant.filter((p) => p.type === "tool-call");
    if (step.assistant.length) messages.push({ role: "assistant", content: step.assistant });
    if (calls.length) {
      const content: ToolModelMessage["content"] = calls.map((call) => {
        const result = step!.results.get(call.toolCallId);
        return {
          type: "tool-result",
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          output: {
            type: "text",
            value: result ?? "(no result: the run was interrupted while this tool ran)",
          },
        };
      });
      messages.push({ role: "tool", content });
    }
    step = undefined;
  };
  const flushUsers = () => {
    messages.push(...pendingUsers);
    pendingUsers = [];
  };
  const stepFor = (data: Record<string, unknown>) => {
    const id = String(data.step ?? "");
    if (!step || step.id !== id) {
      flushStep();
      flushUsers();
      step = { id, assistant: [], results: new Map() };
    }
    return step;
  };

  for (const event of events) {
    const d = event.data;
    switch (event.type) {
      case "message":
        if (d.role === "user") {
          flushStep();
          const text = String(d.text ?? "");
          messages.push({ role: "user", content: images ? images.prompt(text) : text });
          flushUsers(); // follow-ups queued before the agent started come after the prompt
        } else if (d.role === "assistant" && typeof d.text === "string" && d.text !== "") {
          stepFor(d).assistant.push({ type: "text", text: d.text });
        }
        break;
      case "followup":
        if (typeof d.message === "string") {
          const content =
            images && typeof d.followup_id === "string"
              ? images.followup(d.followup_id, d.message)
              : d.message;
          const message: UserModelMessage = { role: "user", content };
          followups.add(message);
          pendingUsers.push(message);
        }
        break;
      case "tool_call":
        if (typeof d.call_id === "string") {
          stepFor(d).assistant.push({
            type: "tool-call",
            toolCallId: d.call_id,
            toolName: String(d.tool ?? "unknown"),
            input: d.input ?? {},
          });
        }
        break;
      case "tool_result":
        if (typeof d.call_id === "string")
          stepFor(d).results.set(d.call_id, formatForModel(d as Partial<ToolOutput>));
        break;
    }
  }
  flushStep();
  flushUsers();

  // The execution's input normally is on the transcript already (the prompt, posted follow-ups); add
  // whatever is not among the trailing user messages.
  const trailing: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === "user"; i--) {
    trailing.push(textOf(messages[i] as UserModelMessage));
  }
  for (const text of input) {
    const at = trailing.indexOf(text);
    if (at >= 0) {
      trailing.splice(at, 1);
      continue;
    }
    // A follow-up posted while the last step's model call ran sits before that step on the transcript,
    // but the step did not take it (it asked a question or was the last): it comes after, once.
    const posted = messages.findLastIndex((m) => followups.has(m) && textOf(m as UserModelMessage) === text);
    if (posted >= 0) messages.push(...messages.splice(posted, 1));
    else messages.push({ role: "user", content: images ? images.byText(text) : text });
  }
  return messages;
}

/** A user message's text (the first text part when it also carries images). */
function textOf(message: UserModelMessage): string {
  const { content } = message;
  if (typeof content === "string") return content;
  const part = content.find((p) => p.type === "text");
  return part && part.type === "text" ? part.text : "";
}

type ToolResults = Map<string, string>;
type AssistantPart =
  | { type: "text"; text: string }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: unknown };

/** The run's usage so far: the sum of its `usage` events. */
export function usageFromTranscript(events: RunEvent[]): RequestUsage {
  const total: RequestUsage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
  for (const e of events) {
    if (e.type !== "usage") continue;
    total.input_tokens += num(e.data.input_tokens);
    total.output_tokens += num(e.data.output_tokens);
    total.total_tokens += num(e.data.total_tokens);
  }
  return total;
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}
