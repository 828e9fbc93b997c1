import type { RunEvent } from "../model/run.ts";
import { formatDuration, stateWord } from "../model/run-wording.ts";
import { escapeHtml, safeHref } from "./html.ts";
import { renderMarkdown } from "./markdown.ts";
import type { PlanStep, TranscriptItem } from "./transcript-items.ts";

/**
 * One transcript item as a list entry. Every entry carries its first event's `data-seq` and its `data-key`
 * (the live page replaces an entry by key); a tool call still waiting for its result says so with
 * `data-pending`, so the page asks for it again. What came from the run is escaped, or rendered from
 * Markdown by markdown.ts, which escapes HTML.
 */
export function renderItem(item: TranscriptItem): string {
  return item.kind === "tool" ? renderTool(item) : renderEvent(item.event, item.key);
}

/** A tool output longer than this shows its start; the whole output is one click further. */
const FOLD_LINES = 20;
const FOLD_CHARS = 2000;

function renderEvent(event: RunEvent, key: string): string {
  const d = event.data;
  const attrs = `class="ev ev-${escapeHtml(event.type)}" data-seq="${event.seq}" data-key="${escapeHtml(key)}"`;
  const cut = d.truncated === true ? " · truncated" : "";
  switch (event.type) {
    case "message": {
      const role = String(d.role ?? "message");
      const text = String(d.text ?? "");
      if (role === "thinking" || role === "reasoning") {
        return `<li ${attrs}><details class="thinking"><summary><span class="label">thinking${cut}</span></summary><pre>${escapeHtml(text)}</pre></details></li>`;
      }
      const body =
        role === "assistant"
          ? `<div class="md">${renderMarkdown(text)}</div>`
          : `<pre>${escapeHtml(text)}</pre>`;
      return `<li ${attrs}><span class="label">${escapeHtml(role)}${cut}</span>${body}</li>`;
    }
    case "state": {
      const msg = (d.status_message as { message?: string } | undefined)?.message;
      return `<li ${attrs}><span class="label">state${cut}</span><pre>${escapeHtml(`${stateWord(String(d.state))}${msg ? ` — ${msg}` : ""}`)}</pre></li>`;
    }
    case "followup":
      return `<li ${attrs}><span class="label">follow-up${cut}</span><pre>${escapeHtml(String(d.message ?? "") + attachedNames(d.attachments))}</pre></li>`;
    case "artifact": {
      // The event holds the artifact as the API lists it: its type and its data (url, number, filename…).
      const a = (d.data && typeof d.data === "object" ? d.data : {}) as Record<string, unknown>;
      const url = typeof a.url === "string" ? safeHref(a.url) : undefined;
      const what =
        d.artifact_type === "PULL_REQUEST"
          ? `Pull request${a.number !== undefined ? ` #${String(a.number)}` : ""}`
          : `${String(d.artifact_type ?? "artifact").toLowerCase()}${typeof a.filename === "string" ? ` ${a.filename}` : ""}${typeof a.description === "string" ? ` (${a.description})` : ""}`;
      return `<li ${attrs}><span class="label">artifact${cut}</span><p>${url ? `<a href="${url}">${escapeHtml(what)}</a>` : escapeHtml(what)}</p></li>`;
    }
    default:
      return `<li ${attrs}><span class="label">${escapeHtml(event.type)}${cut}</span><pre>${escapeHtml(String(d.text ?? d.message ?? JSON.stringify(d)))}</pre></li>`;
  }
}

/** "\n[attached: a.png, b.png]" for a follow-up that came with images. */
function attachedNames(list: unknown): string {
  if (!Array.isArray(list) || list.length === 0) return "";
  return `\n[attached: ${list.map((a) => String((a as { file_name?: unknown })?.file_name ?? "")).join(", ")}]`;
}

/**
 * A tool call and its result as one row that folds: its summary names the tool, what it was given, how
 * it went and how long it took; opened, it shows the input (when the summary does not say it all) and
 * the output, a long output cut to its start with the whole one a click away.
 */
function renderTool(item: Extract<TranscriptItem, { kind: "tool" }>): string {
  const { call, result } = item;
  const data = (call ?? result)!.data;
  const tool = String(data.tool ?? "tool");
  const summary = call ? inputSummary(call.data) : "";
  const status = toolStatus(result);
  const took =
    call && result
      ? ` <span class="took">${formatDuration(Date.parse(result.at) - Date.parse(call.at))}</span>`
      : "";
  const cut = call?.data.truncated === true || result?.data.truncated === true ? " · truncated" : "";
  const plan = item.plan ? renderPlanList(item.plan) : "";
  const input =
    call && !plan && !inputSaysAll(call.data)
      ? `<pre class="input">${escapeHtml(JSON.stringify(call.data.input ?? {}, null, 2))}</pre>`
      : "";
  const output = result ? renderOutput(String(result.data.output ?? "")) : "";
  const pending = result ? "" : " data-pending";
  return `<li class="ev ev-tool${status.failed ? " failed" : ""}" data-seq="${item.seq}" data-key="${escapeHtml(item.key)}"${pending}><details class="tool"><summary><span class="tool-name">${escapeHtml(tool)}</span>${summary ? ` <code class="tool-input">${escapeHtml(summary)}</code>` : ""} <span class="tool-status">${status.words}${cut}</span>${took}</summary>${plan}${input}${output}</details></li>`;
}

function toolStatus(result: RunEvent | undefined): { words: string; failed: boolean } {
  if (!result) return { words: "running…", failed: false };
  const d = result.data;
  const exit = typeof d.exit_code === "number" ? d.exit_code : undefined;
  if (d.timed_out === true) return { words: "timed out", failed: true };
  if (d.error === true || (exit !== undefined && exit !== 0)) {
    return { words: exit !== undefined ? `failed · exit ${exit}` : "failed", failed: true };
  }
  return { words: exit !== undefined ? `ok · exit ${exit}` : "ok", failed: false };
}

/** The one line that says what a call was given: its command, path or pattern, else its first text field. */
export function inputSummary(data: Record<string, unknown>): string {
  const input = (data.input && typeof data.input === "object" ? data.input : {}) as Record<string, unknown>;
  const pick =
    [data.command, data.path, input.command, input.path, input.file_path, input.pattern, input.query].find(
      (v) => typeof v === "string" && v !== "",
    ) ?? Object.values(input).find((v) => typeof v === "string" && v !== "");
  const text = typeof pick === "string" ? pick : "";
  const line = text.split("\n")[0] ?? "";
  return line.length > 160 ? `${line.slice(0, 159)}…` : line === text ? line : `${line} …`;
}

/** Whether the summary already says all of the input (a command, a path): no need to show it again. */
function inputSaysAll(data: Record<string, unknown>): boolean {
  const input = (data.input && typeof data.input === "object" ? data.input : {}) as Record<string, unknown>;
  const keys = Object.keys(input);
  const summary = inputSummary(data);
  return keys.length === 0 || (keys.length === 1 && input[keys[0]!] === summary);
}

function renderOutput(output: string): string {
  if (output === "") return `<p class="muted">No output.</p>`;
  const lines = output.split("\n");
  if (lines.length <= FOLD_LINES && output.length <= FOLD_CHARS) {
    return `<pre class="output">${escapeHtml(output)}</pre>`;
  }
  // The start, then the rest behind a disclosure: together they are the whole output, sent once.
  const head = lines.slice(0, FOLD_LINES).join("\n").slice(0, FOLD_CHARS);
  const rest = output.slice(head.length).replace(/^\n/, "");
  return `<pre class="output">${escapeHtml(head)}</pre><details class="full-output"><summary>Full output (${lines.length} lines, ${output.length} characters): show the rest</summary><pre>${escapeHtml(rest)}</pre></details>`;
}

const STATUS_WORDS: Record<PlanStep["status"], string> = {
  pending: "to do",
  in_progress: "in progress",
  completed: "done",
};

/** A plan as a checklist; the state of a step is said in words too, not by its box alone. */
export function renderPlanList(steps: PlanStep[]): string {
  const items = steps
    .map(
      (s) =>
        `<li class="step step-${s.status}"><span class="box" aria-hidden="true">${s.status === "completed" ? "☑" : s.status === "in_progress" ? "◐" : "☐"}</span> ${escapeHtml(s.text)} <span class="visually-hidden">(${STATUS_WORDS[s.status]})</span></li>`,
    )
    .join("");
  return `<ul class="checklist">${items}</ul>`;
}

/** The plan section at the top of the transcript: the latest plan, or nothing before the agent has one. */
export function renderPlan(plan: { steps: PlanStep[] } | undefined): string {
  if (!plan) return "";
  const done = plan.steps.filter((s) => s.status === "completed").length;
  return `<h2 id="plan-h">Plan <span class="muted">${done} of ${plan.steps.length} done</span></h2>${renderPlanList(plan.steps)}`;
}
