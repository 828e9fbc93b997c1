import { defineTool, ToolError } from "./define-tool.ts";
import type { ToolContext } from "./tool-context.ts";
import { capText } from "./tool-output.ts";

/** Reads a text file as numbered lines, a window of it at a time. */
export function readFileTool({ limits, paths, files }: ToolContext) {
  return defineTool({
    description:
      "Read a text file in the workspace. Returns its lines prefixed with line numbers; use offset/limit " +
      "(1-based line numbers) for large files.",
    schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        offset: { type: "integer", description: "First line to return (1-based)." },
        limit: { type: "integer", description: "Number of lines to return (default 2000)." },
      },
      required: ["path"],
      additionalProperties: false,
    },
    execute: async (input: { path: string; offset?: number; limit?: number }) => {
      const abs = await paths.resolve(input.path);
      const read = await files.read(abs, limits.maxFileBytes);
      if (read.kind === "missing") throw new ToolError(`${input.path} does not exist`);
      if (read.kind === "directory") throw new ToolError(`${input.path} is a directory: use list_files`);
      if (read.kind === "not_regular") throw new ToolError(`${input.path} is not a regular file`);
      if (read.kind === "too_large") {
        throw new ToolError(
          `${input.path} is ${read.size} bytes, more than read_file reads (${limits.maxFileBytes}); use shell (head, sed -n) instead`,
        );
      }
      const buf = read.data;
      if (buf.includes(0)) throw new ToolError(`${input.path} looks like a binary file`);
      const lines = buf.toString("utf8").split("\n");
      if (lines.at(-1) === "") lines.pop();
      const start = Math.max(1, Math.floor(input.offset ?? 1));
      const count = Math.max(1, Math.floor(input.limit ?? 2000));
      const slice = lines.slice(start - 1, start - 1 + count);
      const width = String(start + slice.length).length;
      let text = slice.map((l, i) => `${String(start + i).padStart(width)}\t${l}`).join("\n");
      let truncated = false;
      if (start - 1 + slice.length < lines.length) {
        truncated = true;
        text += `\n[showing lines ${start}-${start + slice.length - 1} of ${lines.length}; read on with offset ${start + slice.length}]`;
      }
      if (lines.length === 0) text = "(empty file)";
      const capped = capText(text, limits.outputChars, "use offset and limit to read parts");
      return { output: capped.text, ...(truncated || capped.truncated ? { truncated: true } : {}) };
    },
  });
}
