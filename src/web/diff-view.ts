import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { DiffFile } from "diff2html/lib/types.js";
import { escapeHtml } from "./html.ts";
import { diff2html, highlighter } from "./page-libraries.ts";

/**
 * The changes of a run as a reader wants them: a list of the files with their counts, then each file's
 * diff, rendered by diff2html (line numbers, word-level changes) with the code highlighted by highlight.js
 * on the server, so that it reads without JavaScript. What a page renders is bounded by lines (a large
 * change costs the page the same); the raw patch and `dispatch diff` have the rest.
 */

/** Files opened at first: a long change starts as its file list. */
const FILES_OPEN = 5;

/** Templates without diff2html's own file header (the page's <summary> names the file instead). */
const FILE_TEMPLATE = `<div class="d2h-file-wrapper" data-lang="{{file.language}}"><div class="d2h-file-diff"><div class="d2h-code-wrapper"><table class="d2h-diff-table"><tbody class="d2h-diff-tbody">{{{diffs}}}</tbody></table></div></div></div>`;

/** `maxLines`: lines of diff the page renders at most, over all its files. */
export function renderChanges(patchText: string, cut: boolean, maxLines: number): string {
  const files = diff2html().parse(patchText);
  if (files.length === 0) return "";
  let budget = maxLines;
  const list: string[] = [];
  const bodies: string[] = [];
  files.forEach((file, i) => {
    const name = fileName(file);
    const id = `file-${i + 1}`;
    const lines = file.blocks.reduce((n, b) => n + b.lines.length, 0);
    const counts = `<span class="added">+${file.addedLines}</span> <span class="deleted">−${file.deletedLines}</span>`;
    list.push(`<li><a href="#${id}">${escapeHtml(name)}</a> ${counts}${tagOf(file)}</li>`);
    const shown = budget > 0 ? limitLines(file, budget) : undefined;
    budget -= Math.min(lines, Math.max(budget, 0));
    const body = shown
      ? highlight(
          compact(
            diff2html().html([shown], {
              drawFileList: false,
              rawTemplates: { "line-by-line-file-diff": FILE_TEMPLATE },
            }),
          ),
          file,
        )
      : "";
    const note =
      !shown || shownLines(shown) < lines
        ? `<p class="muted">${shown ? `The first ${shownLines(shown)} of ${lines} lines` : "Not shown here"}: the raw patch and <code>dispatch diff</code> have the rest.</p>`
        : "";
    bodies.push(
      `<details class="file" id="${id}"${i < FILES_OPEN && shown ? " open" : ""}><summary><code>${escapeHtml(name)}</code> ${counts}${tagOf(file)}</summary>${body}${note}</details>`,
    );
  });
  const partial = cut
    ? `<p class="muted">The start of the patch only: the files below are those it reaches.</p>`
    : "";
  return `<section id="changes" aria-labelledby="changes-h"><h2 id="changes-h">Changes</h2>${partial}
<ul class="files">${list.join("")}</ul>${bodies.join("")}</section>`;
}

function fileName(file: DiffFile): string {
  if (file.isDeleted || file.newName === "/dev/null") return file.oldName;
  if (file.isRename && file.oldName !== file.newName) return `${file.oldName} → ${file.newName}`;
  return file.newName;
}

function tagOf(file: DiffFile): string {
  const tag = file.isNew ? "new" : file.isDeleted ? "deleted" : file.isRename ? "renamed" : "";
  return tag ? ` <span class="tag">${tag}</span>` : "";
}

function shownLines(file: DiffFile): number {
  return file.blocks.reduce((n, b) => n + b.lines.length, 0);
}

/** The file with at most `max` lines of its blocks. */
function limitLines(file: DiffFile, max: number): DiffFile {
  if (shownLines(file) <= max) return file;
  const blocks: DiffFile["blocks"] = [];
  let left = max;
  for (const block of file.blocks) {
    if (left <= 0) break;
    blocks.push({ ...block, lines: block.lines.slice(0, left) });
    left -= block.lines.length;
  }
  return { ...file, blocks };
}

/** diff2html's templates are indented for reading; a line of code never holds a newline, so this is safe. */
function compact(html: string): string {
  return html.replace(/>\n\s*</g, "><");
}

const ENTITIES: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&#x27;": "'",
  "&#x2F;": "/",
  "&#39;": "'",
};

/**
 * Each line's code highlighted by highlight.js for the file's language (a line at a time, as a diff shows
 * lines out of their file). Lines where diff2html marked the changed words keep that marking instead.
 */
function highlight(html: string, file: DiffFile): string {
  const language = diff2html().getLanguage(file.language);
  const hljs = highlighter();
  if (!hljs.getLanguage(language)) return html;
  return html.replace(/<span class="d2h-code-line-ctn">([^<]*)<\/span>/g, (_all, escaped: string) => {
    const code = escaped.replace(/&(?:amp|lt|gt|quot|#x27|#x2F|#39);/g, (e) => ENTITIES[e] ?? e);
    const value = hljs.highlight(code, { language, ignoreIllegals: true }).value;
    return `<span class="d2h-code-line-ctn">${value}</span>`;
  });
}

/**
 * diff2html's stylesheet without what these pages never show (its dark scheme, the side-by-side view,
 * its own file list and headers): a third of its size, sent inline with each page that has a diff.
 */
const D2H_CSS = lineByLineRules(
  readFileSync(createRequire(import.meta.url).resolve("diff2html/bundles/css/diff2html.min.css"), "utf8"),
);

function lineByLineRules(css: string): string {
  const rules: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < css.length; i++) {
    if (css[i] === "{") depth++;
    else if (css[i] === "}" && --depth === 0) {
      rules.push(css.slice(start, i + 1));
      start = i + 1;
    }
  }
  const unused =
    /dark|side|file-list|file-switch|d2h-icon|d2h-tag|file-collapse|file-header|d2h-moved|file-name/;
  const kept: string[] = [];
  for (const rule of rules) {
    if (rule.startsWith("@")) continue;
    const brace = rule.indexOf("{");
    const selectors = rule
      .slice(0, brace)
      .split(",")
      .filter((selector) => !unused.test(selector));
    if (selectors.length > 0) kept.push(`${selectors.join(",")}${rule.slice(brace)}`);
  }
  return kept.join("");
}

/**
 * diff2html's style, then colours that keep 4.5:1 contrast on the added and deleted lines (GitHub's
 * accessible palette) for the line numbers and highlight.js's classes.
 */
export const CHANGES_STYLE = `${D2H_CSS}
#changes .files{list-style:none;padding:0;margin:.25rem 0 .75rem;font-size:14px} #changes .files li{margin:.1rem 0}
.added{color:#116329;font-weight:600} .deleted{color:#a40e26;font-weight:600} .tag{font-size:12px;border:1px solid #d1d9e0;border-radius:1rem;padding:0 .4rem}
details.file{border:1px solid #d1d9e0;border-radius:6px;margin:.5rem 0} details.file>summary{padding:.35rem .6rem;background:#f6f8fa;cursor:pointer}
.d2h-file-wrapper{border:0;margin:0;border-radius:0} .d2h-code-linenumber,.d2h-code-linenumber .line-num1,.d2h-code-linenumber .line-num2{color:#59636e}
.d2h-ins{background:#e6ffec} .d2h-del{background:#ffebe9} .d2h-code-line ins{background:#abf2bc} .d2h-code-line del{background:#ffcecb}
.d2h-code-line,.d2h-info{color:#1f2328} .d2h-info{background:#ddf4ff}
.hljs-keyword,.hljs-doctag,.hljs-template-tag,.hljs-type{color:#a40e26} .hljs-string,.hljs-regexp{color:#0a3069}
.hljs-title,.hljs-title.function_,.hljs-title.class_{color:#6639ba} .hljs-number,.hljs-literal,.hljs-attr,.hljs-attribute,.hljs-variable,.hljs-meta,.hljs-selector-class,.hljs-selector-id{color:#0550ae}
.hljs-comment,.hljs-code,.hljs-quote{color:#57606a} .hljs-built_in,.hljs-symbol{color:#953800} .hljs-name,.hljs-selector-tag,.hljs-section{color:#116329}`;
