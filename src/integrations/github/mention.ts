/**
 * Finding `@<handle>` in a GitHub comment the way a person reads it (docs/surfaces.md): a mention counts
 * only as a word of its own, outside quoted lines (`> …`), code fences and inline code. What is left once
 * the mention is taken out is the command for the shared grammar.
 */

/** Replaces code fences, inline code and quoted lines with spaces of the same length (offsets survive). */
function blankOutIgnored(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, " ");
  return text
    .replace(/^[ \t]{0,3}(```|~~~)[\s\S]*?(?:^[ \t]{0,3}\1[^\n]*$|(?![\s\S]))/gm, blank)
    .replace(/`[^`\n]+`/g, blank)
    .replace(/^[ \t]{0,3}>[^\n]*$/gm, blank);
}

function mentionPattern(handle: string): RegExp {
  const escaped = handle.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  // Not part of an e-mail address or a longer handle (`@dispatch-bot`, `me@dispatch.dev`), any case.
  return new RegExp(`(?<![\\w@./-])@${escaped}(?![\\w-]|\\[bot\\])`, "gi");
}

/** Whether the comment mentions the handle where a mention counts. */
export function mentionsHandle(body: string, handle: string): boolean {
  return mentionPattern(handle).test(blankOutIgnored(body));
}

/**
 * The comment's command: its text with every counting mention taken out ("@dispatch cancel" → "cancel",
 * "Hi @dispatch, fix the tests" → "Hi, fix the tests"). Code and quotes stay as they were: code is prompt
 * to the grammar, and a quote is context.
 */
export function commandText(body: string, handle: string): string {
  const visible = blankOutIgnored(body);
  let out = "";
  let last = 0;
  for (const m of visible.matchAll(mentionPattern(handle))) {
    out += body.slice(last, m.index);
    last = m.index + m[0].length;
  }
  out += body.slice(last);
  return out
    .replace(/^[ \t]*[,:]/, "")
    .replace(/(\S)[ \t]+([,:])/g, "$1$2")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}
