import { createRequire } from "node:module";
import type { HLJSApi } from "highlight.js";

/**
 * The libraries that render a run's text and changes (highlight.js, markdown-it, diff2html), loaded the
 * first time a page needs them: a Dispatch nobody looks at through the web app does not hold them
 * (≈ 9 MB of heap, bench/README.md, "Fourth round: idle memory"). Loaded with `require` so that the
 * renderers stay synchronous; each is a CommonJS build and is loaded once.
 */
const require = createRequire(import.meta.url);

/** `load()` on the first call, its value thereafter. */
export function onFirstUse<T>(load: () => T): () => T {
  let value: { loaded: T } | undefined;
  return () => {
    value ??= { loaded: load() };
    return value.loaded;
  };
}

/** highlight.js with its common languages (about forty), shared by the Markdown and the diff views. */
export const highlighter = onFirstUse(() => require("highlight.js/lib/common") as HLJSApi);

export const markdownIt = onFirstUse(() => require("markdown-it") as typeof import("markdown-it").default);

export const diff2html = onFirstUse(() => ({
  ...(require("diff2html") as typeof import("diff2html")),
  ...(require("diff2html/lib/ui/js/highlight.js-helpers.js") as typeof import("diff2html/lib/ui/js/highlight.js-helpers.js")),
}));
