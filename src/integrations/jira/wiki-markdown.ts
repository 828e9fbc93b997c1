import type { MarkdownOptions } from "./adf-markdown.ts";

/**
 * Jira wiki markup (Data Center's rich text, and the body of Cloud's webhooks, which speak REST v2) as
 * Markdown for a run's prompt. A converter of its own: the npm converters rewrite text inside {code}
 * blocks and URLs (`a_b_c` becomes `a*b*c`), which would corrupt the commands and paths issues are full of.
 * Code and noformat blocks are kept byte for byte; emphasis, links and mentions are converted outside them.
 */

const CODE_BLOCK = /\{(code|noformat)(?::([^}]*))?\}([\s\S]*?)\{\1\}/g;
const MENTION = /\[~(?:accountid:)?([^\]\s|]+)\]/g;

/** The markup as Markdown. */
export function wikiToMarkdown(markup: string, opts: MarkdownOptions = {}): string {
  const source = markup.replace(/\r\n?/g, "\n");
  const out: string[] = [];
  let last = 0;
  for (const m of source.matchAll(CODE_BLOCK)) {
    out.push(text(source.slice(last, m.index), opts));
    const code = m[3]!.replace(/^\n/, "").replace(/\n$/, "");
    const fence = "`".repeat(Math.max(3, longestRun(code) + 1));
    out.push(`\n${fence}${m[1] === "code" ? languageOf(m[2]) : ""}\n${code}\n${fence}\n`);
    last = m.index + m[0].length;
  }
  out.push(text(source.slice(last), opts));
  return out
    .join("")
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** Who the markup mentions (`[~username]`, `[~accountid:…]`) where a mention counts: outside code and quotes. */
export function wikiMentions(markup: string): string[] {
  const visible = markup
    .replace(CODE_BLOCK, " ")
    .replace(/\{quote\}[\s\S]*?(?:\{quote\}|$)/g, " ")
    .replace(/^bq\.[^\n]*$/gm, " ")
    .replace(/\{\{[\s\S]*?\}\}/g, " ");
  return [...visible.matchAll(MENTION)].map((m) => m[1]!);
}

/** `{code:java}`, `{code:title=a.js|language=js}`: the language, when one is named. */
function languageOf(params: string | undefined): string {
  if (!params) return "";
  const named = /(?:^|\|)language=([\w+#-]+)/.exec(params)?.[1];
  if (named) return named;
  return /^[\w+#-]+$/.test(params) ? params : "";
}

/** Text outside code blocks: `{quote}` sections are quoted, panels and colours unwrapped, lines converted. */
function text(markup: string, opts: MarkdownOptions): string {
  const parts = markup.replace(/\{(?:panel|color)(?::[^}]*)?\}/g, "").split("{quote}");
  return parts
    .map((part, i) => {
      const converted = lines(part, opts);
      return i % 2 === 1 ? `\n${quote(converted.trim())}\n` : converted;
    })
    .join("");
}

function lines(part: string, opts: MarkdownOptions): string {
  const out: string[] = [];
  for (const line of part.split("\n")) {
    const heading = /^\s*h([1-6])\.\s+(.*)$/.exec(line);
    const bq = /^\s*bq\.\s+(.*)$/.exec(line);
    const item = /^\s*([*#]+|-)\s+(\S.*)$/.exec(line);
    if (heading) out.push(`${"#".repeat(Number(heading[1]))} ${inline(heading[2]!, opts)}`);
    else if (bq) out.push(quote(inline(bq[1]!, opts)));
    else if (/^\s*-{4,}\s*$/.test(line)) out.push("---");
    else if (/^\s*\|\|/.test(line)) {
      const cells = cellsOf(line.trim().replace(/^\|\||\|\|$/g, ""), "||", opts);
      out.push(`| ${cells.join(" | ")} |`, `|${" --- |".repeat(cells.length)}`);
    } else if (/^\s*\|/.test(line)) {
      out.push(`| ${cellsOf(line.trim().replace(/^\||\|$/g, ""), "|", opts).join(" | ")} |`);
    } else if (item) {
      const markers = item[1]!;
      const ordered = markers.endsWith("#");
      const indent = "  ".repeat(markers.length - 1);
      out.push(`${indent}${ordered ? "1." : "-"} ${inline(item[2]!, opts)}`);
    } else out.push(inline(line, opts));
  }
  return out.join("\n");
}

/** A table row's cells, split on `separator` outside links (`[text|url]` keeps its bar). */
function cellsOf(row: string, separator: string, opts: MarkdownOptions): string[] {
  const protectedRow = row.replace(/\[[^\]]*\]/g, (m) => m.replace(/\|/g, "\uE002"));
  return protectedRow
    .split(separator)
    .map((cell) => inline(cell.replace(/\uE002/g, "|").trim(), opts).replace(/\|/g, "\\|"));
}

/**
 * One line's inline markup. Monospace, links, mentions and escapes are set aside first, so that emphasis
 * is never found inside a URL or code; then bold, italics, strikethrough and inserts are converted.
 */
function inline(line: string, opts: MarkdownOptions): string {
  const kept: string[] = [];
  const keep = (value: string) => `\uE000${kept.push(value) - 1}\uE001`;
  let out = line
    .replace(/\\([*_\-+^~{}[\]|!?#])/g, (_m, c: string) => keep(c))
    .replace(/\{\{([\s\S]*?)\}\}/g, (_m, code: string) => keep(codeSpan(code)))
    .replace(/\[~(accountid:)?([^\]\s|]+)\]/g, (_m, _cloud, id: string) =>
      keep(opts.mention ? opts.mention(id, `@${id}`) : `@${id}`),
    )
    .replace(/\[([^\]|]*)\|([^\]|]+)(?:\|[^\]]*)?\]/g, (_m, label: string, url: string) =>
      keep(label.trim() ? `[${label.trim()}](${url.trim()})` : `<${url.trim()}>`),
    )
    .replace(/\[((?:https?|mailto|ftp):[^\]\s]+)\]/g, (_m, url: string) => keep(`<${url}>`))
    .replace(/\[\^([^\]]+)\]/g, (_m, file: string) => keep(`[${file}]`))
    .replace(/!([^\s!|]+)(?:\|[^!\n]*)?!/g, (_m, file: string) => keep(`[${file}]`))
    .replace(/\bhttps?:\/\/[^\s<>"]+/g, (url) => keep(url));
  out = out
    .replace(/(^|[^\w*])\*(?=\S)([^*\n]*?\S)\*(?![\w*])/g, "$1**$2**")
    .replace(/(^|[^\w_])_(?=\S)([^_\n]*?\S)_(?![\w_])/g, "$1*$2*")
    .replace(/(^|[\s(])-(?=\S)([^-\n]*?\S)-(?=$|[\s).,;:!?])/g, "$1~~$2~~")
    .replace(/(^|[\s(])\+(?=\S)([^+\n]*?\S)\+(?=$|[\s).,;:!?])/g, "$1$2")
    .replace(/\?\?(?=\S)([^?\n]*?\S)\?\?/g, "*$1*");
  return out.replace(/\uE000(\d+)\uE001/g, (_m, i: string) => kept[Number(i)] ?? "");
}

function codeSpan(code: string): string {
  const ticks = "`".repeat(longestRun(code) + 1);
  const pad = code.startsWith("`") || code.endsWith("`") ? " " : "";
  return `${ticks}${pad}${code}${pad}${ticks}`;
}

function longestRun(text: string): number {
  return Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
}

function quote(text: string): string {
  return text
    .split("\n")
    .map((line) => (line ? `> ${line}` : ">"))
    .join("\n");
}
