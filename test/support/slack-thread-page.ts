/**
 * A Slack thread as the fake Slack holds it, drawn as HTML in Block Kit's shapes (sections and context
 * in mrkdwn, buttons; a streamed message's plan, tasks and text), for a screenshot of what people see. It
 * draws what was sent, not Slack's exact look: mrkdwn's *bold*, `code`, <url|label> links and emoji
 * names are rendered, everything else is text.
 */

type Message = Record<string, unknown>;

/** Emoji names as symbols a browser without an emoji font draws too. */
const EMOJI: Record<string, string> = {
  white_check_mark: "✔",
  x: "✘",
  no_entry_sign: "⊘",
  hourglass_flowing_sand: "⧗",
  arrows_counterclockwise: "↻",
  eyes: "◉",
};

function escapeText(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Slack mrkdwn (already escaped by its sender) to HTML. */
function mrkdwn(text: string): string {
  return text
    .replace(/&(?!amp;|lt;|gt;)/g, "&amp;")
    .replace(/<([^|>]+)\|([^>]+)>/g, (_m, _url: string, label: string) => `<a>${label}</a>`)
    .replace(/<@([A-Z0-9]+)>/g, (_m, user: string) => `<b class="mention">@${user}</b>`)
    .replace(/<(https?:[^>]+)>/g, (_m, url: string) => `<a>${url}</a>`)
    .replace(/\*([^*\n]+)\*/g, "<b>$1</b>")
    .replace(/`([^`\n]+)`/g, "<code>$1</code>")
    .replace(/:([a-z_]+):/g, (m, name: string) => EMOJI[name] ?? m)
    .replace(/\n/g, "<br>");
}

function block(b: Record<string, unknown>): string {
  const text = (b.text as { text?: string } | undefined)?.text ?? "";
  switch (b.type) {
    case "section":
    case "header":
      return `<div class="${b.type}">${mrkdwn(text)}</div>`;
    case "context":
      return `<div class="context">${((b.elements as Array<{ text?: string }>) ?? []).map((e) => mrkdwn(e.text ?? "")).join(" ")}</div>`;
    case "actions":
      return `<div class="actions">${((b.elements as Array<{ text?: { text?: string } }>) ?? []).map((e) => `<span class="button">${escapeText(e.text?.text ?? "")}</span>`).join("")}</div>`;
    default:
      return "";
  }
}

const STATUS_ICON: Record<string, string> = { pending: "○", in_progress: "◐", complete: "✓", error: "✗" };

/** A streamed message: its plan title, each task at its latest state (in first-seen order), its text. */
function streamed(chunks: Array<Record<string, unknown>>): string {
  const tasks = new Map<string, Record<string, unknown>>();
  let title = "";
  const text: string[] = [];
  for (const c of chunks) {
    if (c.type === "plan_update") title = String(c.title);
    if (c.type === "task_update") tasks.set(String(c.id), { ...tasks.get(String(c.id)), ...c });
    if (c.type === "markdown_text") text.push(String(c.text));
  }
  const rows = [...tasks.values()]
    .map(
      (t) =>
        `<li class="task ${t.status}"><span>${STATUS_ICON[String(t.status)] ?? ""}</span> ${escapeText(String(t.title))}${t.output ? `<pre>${escapeText(String(t.output))}</pre>` : ""}</li>`,
    )
    .join("");
  return `<div class="plan"><div class="plan-title">${escapeText(title)}</div><ul>${rows}</ul></div>${text.map((t) => `<div class="section">${mrkdwn(t)}</div>`).join("")}`;
}

export function slackThreadPage(request: { user: string; text: string }, messages: Message[]): string {
  const items = messages.map((m) => {
    const body = Array.isArray(m.chunks)
      ? streamed(m.chunks as Array<Record<string, unknown>>)
      : Array.isArray(m.blocks)
        ? (m.blocks as Array<Record<string, unknown>>).map(block).join("")
        : `<div class="section">${mrkdwn(String(m.text ?? ""))}</div>`;
    return `<div class="message"><div class="avatar bot">D</div><div><div class="who">Dispatch <span class="app">APP</span></div>${body}</div></div>`;
  });
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Slack thread</title><style>
body{font:15px/1.46 -apple-system,"Segoe UI",Lato,sans-serif;color:#1d1c1d;margin:0;background:#fff}
.thread{max-width:720px;padding:16px 20px} h1{font-size:16px;margin:0 0 12px;border-bottom:1px solid #ddd;padding-bottom:8px}
.message{display:flex;gap:10px;margin:14px 0} .avatar{width:36px;height:36px;border-radius:6px;background:#611f69;color:#fff;display:flex;align-items:center;justify-content:center;font-weight:700;flex:none}
.avatar.person{background:#1264a3} .who{font-weight:700} .app{font-size:10px;background:#e8e8e8;color:#616061;padding:0 3px;border-radius:2px;font-weight:600}
.context{font-size:13px;color:#616061;margin:2px 0} .section{margin:2px 0} a{color:#1264a3} code{font:12px monospace;background:#f8f8f8;border:1px solid #e8e8e8;padding:0 3px;border-radius:3px;color:#e01e5a}
.mention{background:#e8f5fa;color:#1264a3;font-weight:400} .actions{margin-top:6px;display:flex;gap:8px} .button{border:1px solid #ccc;border-radius:4px;padding:2px 12px;font-weight:700;font-size:13px}
.plan{border:1px solid #ddd;border-radius:8px;padding:8px 12px;margin:4px 0} .plan-title{font-weight:700} .plan ul{list-style:none;padding:0;margin:4px 0}
.task{margin:3px 0} .task span{display:inline-block;width:1.2em;color:#007a5a} .task.error span{color:#e01e5a} .task.in_progress span{color:#1264a3}
.task pre{margin:2px 0 2px 1.2em;font:12px monospace;background:#f8f8f8;padding:4px 6px;border-radius:4px;white-space:pre-wrap}
</style></head><body><div class="thread"><h1>Thread</h1>
<div class="message"><div class="avatar person">${escapeText(request.user.slice(0, 1))}</div><div><div class="who">${escapeText(request.user)}</div><div class="section">${mrkdwn(escapeText(request.text))}</div></div></div>
${items.join("")}</div></body></html>`;
}
