import type { RunEvent } from "../model/run.ts";
import { isTerminal } from "../model/run-state.ts";

/**
 * A run's conversation as the Warp Platform API normalises it (GET /agent/runs/{id}/conversation,
 * docs/api.md), built from its transcript: one step per execution (the prompt's, then each follow-up's
 * that started a new one), each an ordered list of messages whose content blocks are text, actions (tool
 * calls), their results and notable events. Nothing is invented: a tool call's input and a result's output
 * are what the transcript recorded, without the bookkeeping fields.
 */

type Block =
  | { type: "text"; text: string; message_id: string }
  | {
      type: "action";
      id: string;
      category: Category;
      name: string;
      input: Record<string, unknown>;
      message_id: string;
    }
  | {
      type: "action_result";
      action_id: string;
      category: Category;
      name: string;
      output: Record<string, unknown>;
      state: "completed" | "failed";
      message_id: string;
    }
  | { type: "event"; name: string; data: Record<string, unknown>; message_id: string };

type Role = "user" | "assistant" | "tool" | "system";

interface Message {
  role: Role;
  content: Block[];
  message_ids: string[];
  timestamp: string;
}

interface Step {
  id: string;
  description?: string;
  messages: Message[];
  steps: Step[];
  started_at?: string;
  completed_at?: string;
}

type Category = "command" | "files" | "search" | "integration";

/** What kind of work a tool does, by its name (the builtin harness's tools, Claude Code's, Codex's). */
export function categoryOf(tool: string): Category {
  const name = tool.toLowerCase();
  if (name.includes("__") || name.startsWith("mcp")) return "integration";
  if (/^(shell|bash|exec|command|command_execution|local_shell)$/.test(name)) return "command";
  if (/(grep|search|glob|find|web)/.test(name)) return "search";
  if (/(read|write|edit|file|list|ls|patch|notebook)/.test(name)) return "files";
  return "integration";
}

const BOOKKEEPING = new Set(["tool", "call_id", "step"]);
const without = (data: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(data).filter(([k]) => !BOOKKEEPING.has(k)));

export function runConversation(runId: string, events: readonly RunEvent[]) {
  const steps: Step[] = [];
  let step: Step | undefined;
  // Calls not yet answered, by tool name: the scripted harness's results carry no call id.
  const open = new Map<string, string[]>();
  let execution = 0;
  let handoff = false;

  const add = (role: Role, block: Block, at: string) => {
    if (!step) {
      execution = Math.max(execution, 1);
      step = { id: `${runId}:${execution}`, messages: [], steps: [] };
      steps.push(step);
    }
    const last = step.messages.at(-1);
    if (last && last.role === role) {
      last.content.push(block);
      last.message_ids.push(block.message_id);
    } else {
      step.messages.push({ role, content: [block], message_ids: [block.message_id], timestamp: at });
    }
    step.started_at ??= at;
    step.completed_at = at;
    if (role === "user" && block.type === "text") step.description ??= block.text;
  };

  for (const e of events) {
    const id = String(e.seq);
    const d = e.data;
    switch (e.type) {
      case "state":
        // A new execution: the run's first, or one a follow-up started after the last had ended (its step
        // began with that follow-up, recorded just before this state).
        if (d.state === "QUEUED" && (d.previous == null || isTerminal(String(d.previous)))) {
          if (handoff) handoff = false;
          else {
            execution++;
            step = undefined;
          }
        }
        break;
      case "message":
        add(
          d.role === "user" ? "user" : "assistant",
          { type: "text", text: String(d.text ?? ""), message_id: id },
          e.at,
        );
        break;
      case "followup":
        if (d.outcome === "handoff_execution") {
          execution++;
          step = undefined;
          handoff = true;
        }
        add("user", { type: "text", text: String(d.message ?? ""), message_id: id }, e.at);
        break;
      case "tool_call": {
        const name = String(d.tool ?? "tool");
        const callId = typeof d.call_id === "string" ? d.call_id : `call-${id}`;
        open.set(name, [...(open.get(name) ?? []), callId]);
        add(
          "assistant",
          { type: "action", id: callId, category: categoryOf(name), name, input: without(d), message_id: id },
          e.at,
        );
        break;
      }
      case "tool_result": {
        const name = String(d.tool ?? "tool");
        const pending = open.get(name) ?? [];
        const callId = typeof d.call_id === "string" ? d.call_id : (pending[0] ?? `call-${id}`);
        open.set(
          name,
          pending.filter((c) => c !== callId),
        );
        const failed = d.error === true || (typeof d.exit_code === "number" && d.exit_code !== 0);
        add(
          "tool",
          {
            type: "action_result",
            action_id: callId,
            category: categoryOf(name),
            name,
            output: without(d),
            state: failed ? "failed" : "completed",
            message_id: id,
          },
          e.at,
        );
        break;
      }
      case "error":
        add("system", { type: "event", name: "error", data: without(d), message_id: id }, e.at);
        break;
      case "log":
        if (d.phase === "interrupt")
          add("system", { type: "event", name: "interrupt", data: without(d), message_id: id }, e.at);
        break;
    }
  }
  return { conversation_id: runId, steps };
}
