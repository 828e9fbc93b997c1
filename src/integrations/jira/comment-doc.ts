import type { AdfNode } from "./adf-markdown.ts";

/**
 * What Dispatch writes in a Jira comment, before it is written in either flavour: paragraphs of text runs
 * (bold, code, links), mentions, and preformatted blocks. Outbox rows carry this model; the sender renders
 * it as Atlassian Document Format on Cloud and as wiki markup on Data Center, so the notifier never needs
 * to know the flavour. Text from runs and issues is data: ADF carries it as JSON text, and wiki markup
 * escapes every character that would be markup.
 */
export type Inline =
  | { text: string; bold?: boolean; code?: boolean; href?: string }
  | { mention: string; name: string };

export type Block = { paragraph: Inline[] } | { preformatted: string };

export type CommentDoc = Block[];

/** Shorthands for building documents. */
export const t = (text: string): Inline => ({ text });
export const bold = (text: string): Inline => ({ text, bold: true });
export const code = (text: string): Inline => ({ text, code: true });
export const link = (text: string, href: string): Inline => ({ text, href });
export const mention = (id: string, name: string): Inline => ({ mention: id, name });
export const paragraph = (...inlines: Inline[]): Block => ({ paragraph: inlines });

/** The document as ADF (Jira Cloud, REST v3). */
export function toAdf(doc: CommentDoc): AdfNode & { version: 1 } {
  return {
    type: "doc",
    version: 1,
    content: doc.map((b) =>
      "preformatted" in b
        ? { type: "codeBlock", content: b.preformatted ? [{ type: "text", text: b.preformatted }] : [] }
        : { type: "paragraph", content: b.paragraph.filter(nonEmpty).map(adfInline) },
    ),
  };
}

function nonEmpty(i: Inline): boolean {
  return "mention" in i || i.text !== "";
}

function adfInline(i: Inline): AdfNode {
  if ("mention" in i) return { type: "mention", attrs: { id: i.mention, text: `@${i.name}` } };
  const marks: NonNullable<AdfNode["marks"]> = [];
  if (i.code) marks.push({ type: "code" });
  else if (i.bold) marks.push({ type: "strong" });
  if (i.href) marks.push({ type: "link", attrs: { href: i.href } });
  return { type: "text", text: i.text, ...(marks.length ? { marks } : {}) };
}

/** The document as wiki markup (Jira Data Center, REST v2). */
export function toWiki(doc: CommentDoc): string {
  return doc
    .map((b) =>
      "preformatted" in b
        ? // The block ends at the next {noformat}: one inside the text is broken up so it cannot.
          `{noformat}\n${b.preformatted.replace(/\{noformat\}/gi, "{ noformat}")}\n{noformat}`
        : b.paragraph.map(wikiInline).join(""),
    )
    .join("\n\n");
}

function wikiInline(i: Inline): string {
  if ("mention" in i) {
    // A name that would end the mention's brackets early is written as text instead.
    return /^[^\s[\]|~{}]+$/.test(i.mention) ? `[~${i.mention}]` : escapeWiki(`@${i.name}`);
  }
  if (i.text === "") return "";
  const text = i.code ? `{{${escapeWiki(i.text)}}}` : i.bold ? `*${escapeWiki(i.text)}*` : escapeWiki(i.text);
  return i.href ? `[${text}|${i.href.replace(/[|\]\s]/g, encodeURIComponent)}]` : text;
}

/** Every character wiki markup could read as markup is escaped; line breaks become spaces. */
export function escapeWiki(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").replace(/[\\*_\-+^~{}[\]|!?#]/g, (c) => `\\${c}`);
}
