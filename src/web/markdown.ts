import type { MarkdownIt } from "markdown-it";
import { escapeHtml } from "./html.ts";
import { highlighter, markdownIt, onFirstUse } from "./page-libraries.ts";

/**
 * The agent's messages as Markdown. markdown-it escapes any HTML in the text (`html: false`) and refuses
 * javascript:, vbscript:, file: and data: links; text from a run is data (SECURITY.md), never markup of
 * the page. Fenced code is highlighted by highlight.js (which escapes what it does not mark up). Made on
 * the first message a page renders (page-libraries.ts).
 */
const renderer = onFirstUse((): MarkdownIt => {
  const md = new (markdownIt())({
    html: false,
    linkify: true,
    highlight: (code, lang) =>
      lang && highlighter().getLanguage(lang)
        ? highlighter().highlight(code, { language: lang, ignoreIllegals: true }).value
        : "",
  });

  // An image becomes a link to it: the page's CSP admits no other site's image, and a run's text must not
  // make the reader's browser fetch anything by itself.
  md.renderer.rules.image = (tokens, i) => {
    const token = tokens[i];
    const src = String(token?.attrGet("src") ?? "");
    const alt = String(token?.content || src);
    return `<a href="${escapeHtml(src)}" rel="noopener noreferrer nofollow">${escapeHtml(alt)}</a>`;
  };

  // Links leave the page without telling the other site where they came from.
  const defaultLinkOpen =
    md.renderer.rules.link_open ?? ((tokens, i, options, _env, self) => self.renderToken(tokens, i, options));
  md.renderer.rules.link_open = (tokens, i, options, env, self) => {
    tokens[i]?.attrSet("rel", "noopener noreferrer nofollow");
    return defaultLinkOpen(tokens, i, options, env, self);
  };

  // The message sits under the page's own headings (h1 the run, h2 the sections): its headings start at h3.
  md.core.ruler.push("nest_headings", (state) => {
    for (const token of state.tokens) {
      if (token.type === "heading_open" || token.type === "heading_close") {
        token.tag = `h${Math.min(6, Number(token.tag.slice(1)) + 2)}`;
      }
    }
    return true;
  });
  return md;
});

export function renderMarkdown(text: string): string {
  return renderer().render(text);
}
