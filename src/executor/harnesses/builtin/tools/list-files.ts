import { defineTool } from "./define-tool.ts";
import { globToRegExp, matchesGlob } from "./glob-to-regexp.ts";
import type { ToolContext } from "./tool-context.ts";
import { capText } from "./tool-output.ts";
import { walkFiles } from "./walk-files.ts";

/** Lists a directory tree, optionally through a glob. */
export function listFilesTool({ signal, limits, paths }: ToolContext) {
  return defineTool({
    description:
      "List files under a directory of the workspace, recursively (skipping .git and node_modules), " +
      'optionally filtered by a glob such as "src/**/*.ts" or "*.md" (matched against paths relative to the workspace).',
    schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Directory to list (default: the workspace)." },
        pattern: { type: "string", description: "Glob filter, e.g. **/*.py" },
      },
      additionalProperties: false,
    },
    execute: async (input: { path?: string; pattern?: string }) => {
      const root = await paths.resolve(input.path ?? ".");
      const matcher = input.pattern ? globToRegExp(input.pattern) : undefined;
      const found: string[] = [];
      const walk = await walkFiles(root, limits.maxWalkEntries, signal, (abs, isDir) => {
        const rel = paths.display(abs);
        if (!matchesGlob(matcher, rel)) return;
        found.push(isDir ? `${rel}/` : rel);
      });
      found.sort();
      let text = found.length ? found.join("\n") : "(no matching files)";
      if (walk.stopped)
        text += `\n[stopped after visiting ${limits.maxWalkEntries} entries: narrow the path]`;
      const capped = capText(text, limits.outputChars, "narrow the path or pattern");
      return {
        output: capped.text,
        ...(capped.truncated || walk.stopped ? { truncated: true } : {}),
      };
    },
  });
}
