import { defineTool, ToolError } from "./define-tool.ts";
import { globToRegExp, matchesGlob } from "./glob-to-regexp.ts";
import type { ToolContext } from "./tool-context.ts";

/** Longest matching line shown in full. */
const MAX_LINE_CHARS = 500;

/** grep -rn over the workspace (or one file), in JavaScript regular expressions. */
export function searchFilesTool({ signal, limits, paths, files }: ToolContext) {
  return defineTool({
    description:
      "Search the contents of files in the workspace for a regular expression (JavaScript syntax), like grep -rn. " +
      "Returns path:line: text for each matching line (skipping .git, node_modules and binary files).",
    schema: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "Regular expression to look for." },
        path: { type: "string", description: "Directory or file to search (default: the workspace)." },
        glob: { type: "string", description: "Only files whose path matches this glob, e.g. **/*.ts" },
        ignore_case: { type: "boolean" },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    execute: async (input: { pattern: string; path?: string; glob?: string; ignore_case?: boolean }) => {
      let regex: RegExp;
      try {
        regex = new RegExp(input.pattern, input.ignore_case ? "i" : "");
      } catch (err) {
        throw new ToolError(`invalid regular expression: ${(err as Error).message}`);
      }
      const root = await paths.resolve(input.path ?? ".");
      const matcher = input.glob ? globToRegExp(input.glob) : undefined;
      const walk = await files.walk(root, limits.maxWalkEntries, { fileRoot: true });
      if ("problem" in walk) {
        throw new ToolError(
          walk.problem === "missing"
            ? `${input.path} does not exist`
            : `${input.path} is neither a file nor a directory`,
        );
      }
      const candidates = walk.entries
        .filter(
          (e) =>
            e.type === "file" &&
            e.size <= limits.maxFileBytes &&
            (e.abs === root || matchesGlob(matcher, paths.display(e.abs))),
        )
        .map((e) => e.abs)
        .sort();
      const hits: string[] = [];
      let size = 0;
      let truncated = walk.stopped;
      await files.readEach(candidates, limits.maxFileBytes, (file, buf) => {
        if (signal.aborted || size > limits.outputChars) return false;
        if (buf.includes(0)) return true;
        const lines = buf.toString("utf8").split("\n");
        for (let i = 0; i < lines.length; i++) {
          if (!regex.test(lines[i]!)) continue;
          const line =
            lines[i]!.length > MAX_LINE_CHARS ? `${lines[i]!.slice(0, MAX_LINE_CHARS)}…` : lines[i]!;
          const hit = `${paths.display(file)}:${i + 1}: ${line}`;
          size += hit.length + 1;
          if (size > limits.outputChars) {
            truncated = true;
            break;
          }
          hits.push(hit);
        }
        return true;
      });
      let text = hits.length ? hits.join("\n") : "(no matches)";
      if (truncated) text += "\n[results truncated: narrow the pattern, path or glob]";
      return { output: text, ...(truncated ? { truncated: true } : {}) };
    },
  });
}
