import { defineTool, ToolError } from "./define-tool.ts";
import { globToRegExp, matchesGlob } from "./glob-to-regexp.ts";
import type { ToolContext } from "./tool-context.ts";
import { capText } from "./tool-output.ts";

/** Lists a directory tree, optionally through a glob. */
export function listFilesTool({ limits, paths, files }: ToolContext) {
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
      const walk = await files.walk(root, limits.maxWalkEntries);
      if ("problem" in walk) throw new ToolError(`${input.path ?? "."} is not a readable directory`);
      const found: string[] = [];
      for (const entry of walk.entries) {
        const rel = paths.display(entry.abs);
        if (matchesGlob(matcher, rel)) found.push(entry.type === "dir" ? `${rel}/` : rel);
      }
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
