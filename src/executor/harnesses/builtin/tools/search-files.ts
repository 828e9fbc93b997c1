import { lstat, readFile } from "node:fs/promises";
import { defineTool, ToolError } from "./define-tool.ts";
import { globToRegExp, matchesGlob } from "./glob-to-regexp.ts";
import type { ToolContext } from "./tool-context.ts";
import { walkFiles } from "./walk-files.ts";

/** Longest matching line shown in full. */
const MAX_LINE_CHARS = 500;

/** grep -rn over the workspace (or one file), in JavaScript regular expressions. */
export function searchFilesTool({ signal, limits, paths }: ToolContext) {
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
      const files: string[] = [];
      const info = await lstat(root).catch(() => undefined);
      if (!info) throw new ToolError(`${input.path} does not exist`);
      let stopped = false;
      if (info.isFile()) files.push(root);
      else {
        const walk = await walkFiles(root, limits.maxWalkEntries, signal, (abs, isDir) => {
          if (isDir) return;
          if (!matchesGlob(matcher, paths.display(abs))) return;
          files.push(abs);
        });
        stopped = walk.stopped;
      }
      files.sort();
      const hits: string[] = [];
      let size = 0;
      let truncated = stopped;
      for (const file of files) {
        if (signal.aborted || size > limits.outputChars) break;
        const fi = await lstat(file).catch(() => undefined);
        if (!fi?.isFile() || fi.size > limits.maxFileBytes) continue;
        const buf = await readFile(file).catch(() => undefined);
        if (!buf || buf.includes(0)) continue;
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
      }
      let text = hits.length ? hits.join("\n") : "(no matches)";
      if (truncated) text += "\n[results truncated: narrow the pattern, path or glob]";
      return { output: text, ...(truncated ? { truncated: true } : {}) };
    },
  });
}
