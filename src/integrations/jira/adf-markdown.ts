/**
 * Atlassian Document Format (Jira Cloud's rich text: descriptions and comments read through REST v3) as
 * Markdown for a run's prompt. A converter of its own: the libraries on npm drop mentions, print to the
 * console on node types they do not know and lose nested lists (docs/surfaces.md, Jira). It covers the
 * node types Jira's editor writes; an unknown node keeps its text, so nothing a person wrote is lost.
 */

/** A node of an ADF document, as Jira sends it. */
export interface AdfNode {
  type: string;
  text?: string;
  attrs?: Record<string, unknown>;
  marks?: Array<{ type: string; attrs?: Record<string, unknown> }>;
  content?: AdfNode[];
}

export interface MarkdownOptions {
  /** How a mention reads: `@Name` by default; "" drops it (the service account's, in a command). */
  mention?: (id: string, text: string) => string;
}

/** Whether `value` is shaped like an ADF document (`{type: "doc", content: [...]}`). */
export function isAdfDocument(value: unknown): value is AdfNode {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as AdfNode).type === "doc" &&
    Array.isArray((value as AdfNode).content)
  );
}

/** The document as Markdown: blocks separated by a blank line, lists indented by their nesting. */
export function adfToMarkdown(doc: AdfNode, opts: MarkdownOptions = {}): string {
  return blocks(doc.content ?? [], opts)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** The account ids the document mentions where a mention counts: outside quotes. */
export function adfMentions(doc: AdfNode): string[] {
  const ids: string[] = [];
  const walk = (node: AdfNode) => {
    if (node.type === "blockquote") return;
    if (node.type === "mention" && typeof node.attrs?.id === "string") ids.push(node.attrs.id);
    for (const child of node.content ?? []) walk(child);
  };
  walk(doc);
  return ids;
}

function blocks(nodes: AdfNode[], opts: MarkdownOptions): string {
  return nodes
    .map((n) => block(n, opts))
    .filter((b) => b.trim() !== "")
    .join("\n\n");
}

function block(node: AdfNode, opts: MarkdownOptions): string {
  const attrs = node.attrs ?? {};
  switch (node.type) {
    case "paragraph":
      return inline(node.content ?? [], opts);
    case "heading": {
      const level = Math.min(6, Math.max(1, Number(attrs.level) || 1));
      return `${"#".repeat(level)} ${inline(node.content ?? [], opts)}`;
    }
    case "codeBlock": {
      const code = (node.content ?? []).map((t) => t.text ?? "").join("");
      const fence = fenceFor(code);
      const language = typeof attrs.language === "string" ? attrs.language : "";
      return `${fence}${language}\n${code}\n${fence}`;
    }
    case "blockquote":
      return quoted(blocks(node.content ?? [], opts));
    case "panel": {
      const kind = typeof attrs.panelType === "string" ? attrs.panelType : "info";
      return quoted(`**${kind[0]!.toUpperCase()}${kind.slice(1)}:** ${blocks(node.content ?? [], opts)}`);
    }
    case "bulletList":
    case "orderedList":
    case "taskList":
    case "decisionList":
      return list(node, opts);
    case "rule":
      return "---";
    case "table":
      return table(node, opts);
    case "expand":
    case "nestedExpand": {
      const title = typeof attrs.title === "string" && attrs.title ? `**${attrs.title}**\n\n` : "";
      return `${title}${blocks(node.content ?? [], opts)}`;
    }
    case "mediaSingle":
    case "mediaGroup":
      return (node.content ?? []).map((m) => media(m)).join(" ");
    case "media":
      return media(node);
    case "blockCard":
    case "embedCard":
      return typeof attrs.url === "string" ? `<${attrs.url}>` : "";
    default:
      // Layouts, extensions and whatever Jira adds next: their blocks, or their inline content.
      if ((node.content ?? []).some((c) => c.type === "text" || isInlineAtom(c.type))) {
        return inline(node.content ?? [], opts);
      }
      return blocks(node.content ?? [], opts);
  }
}

function list(node: AdfNode, opts: MarkdownOptions): string {
  let number = Number(node.attrs?.order) || 1;
  return (node.content ?? [])
    .map((item) => {
      let marker = "-";
      if (node.type === "orderedList") marker = `${number++}.`;
      if (item.type === "taskItem") marker = item.attrs?.state === "DONE" ? "- [x]" : "- [ ]";
      const children = item.content ?? [];
      // Task and decision items hold inline content; list items hold blocks (nested lists among them),
      // kept tight under their marker.
      const body = children.some((c) => c.type === "text" || isInlineAtom(c.type))
        ? inline(children, opts)
        : children
            .map((c) => block(c, opts))
            .filter((b) => b.trim() !== "")
            .join("\n");
      const indent = " ".repeat(marker.length + 1);
      return `${marker} ${body.replace(/\n(?=[^\n])/g, `\n${indent}`)}`;
    })
    .join("\n");
}

function table(node: AdfNode, opts: MarkdownOptions): string {
  const rows = (node.content ?? []).map((row) =>
    (row.content ?? []).map((cell) =>
      blocks(cell.content ?? [], opts)
        .replace(/\s*\n+\s*/g, " ")
        .replace(/\|/g, "\\|"),
    ),
  );
  if (rows.length === 0) return "";
  const width = Math.max(...rows.map((r) => r.length));
  const line = (cells: string[]) =>
    `| ${Array.from({ length: width }, (_, i) => cells[i] ?? "").join(" | ")} |`;
  const [head = [], ...rest] = rows;
  return [line(head), `|${" --- |".repeat(width)}`, ...rest.map(line)].join("\n");
}

function media(node: AdfNode): string {
  const alt = typeof node.attrs?.alt === "string" && node.attrs.alt ? node.attrs.alt : "attachment";
  return `[${alt}]`;
}

const INLINE_ATOMS = new Set([
  "hardBreak",
  "mention",
  "emoji",
  "inlineCard",
  "status",
  "date",
  "placeholder",
]);

function isInlineAtom(type: string): boolean {
  return INLINE_ATOMS.has(type);
}

function inline(nodes: AdfNode[], opts: MarkdownOptions): string {
  return nodes.map((n) => inlineNode(n, opts)).join("");
}

function inlineNode(node: AdfNode, opts: MarkdownOptions): string {
  const attrs = node.attrs ?? {};
  switch (node.type) {
    case "text":
      return marked(node.text ?? "", node.marks ?? []);
    case "hardBreak":
      return "\n";
    case "mention": {
      const id = typeof attrs.id === "string" ? attrs.id : "";
      const text = typeof attrs.text === "string" && attrs.text ? attrs.text.replace(/^@?/, "@") : `@${id}`;
      return opts.mention ? opts.mention(id, text) : text;
    }
    case "emoji":
      return String(attrs.text ?? attrs.shortName ?? "");
    case "inlineCard":
      return typeof attrs.url === "string" ? `<${attrs.url}>` : "";
    case "status":
      return `[${String(attrs.text ?? "")}]`;
    case "date": {
      const ms = Number(attrs.timestamp);
      return Number.isFinite(ms) ? new Date(ms).toISOString().slice(0, 10) : "";
    }
    case "placeholder":
      return "";
    default:
      return node.text ?? inline(node.content ?? [], opts);
  }
}

function marked(text: string, marks: NonNullable<AdfNode["marks"]>): string {
  if (text === "") return "";
  const has = (type: string) => marks.some((m) => m.type === type);
  let out = text;
  if (has("code")) {
    const ticks = "`".repeat(longestRun(text, "`") + 1);
    const pad = text.startsWith("`") || text.endsWith("`") ? " " : "";
    out = `${ticks}${pad}${text}${pad}${ticks}`;
  } else {
    if (has("strike")) out = `~~${out}~~`;
    if (has("em")) out = `*${out}*`;
    if (has("strong")) out = `**${out}**`;
  }
  const href = marks.find((m) => m.type === "link")?.attrs?.href;
  if (typeof href === "string" && href) out = `[${out}](${href.replace(/[()\s]/g, encodeURIComponent)})`;
  return out;
}

function fenceFor(code: string): string {
  return "`".repeat(Math.max(3, longestRun(code, "`") + 1));
}

function longestRun(text: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (const c of text) {
    run = c === char ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return longest;
}

function quoted(text: string): string {
  return text
    .split("\n")
    .map((line) => (line ? `> ${line}` : ">"))
    .join("\n");
}
