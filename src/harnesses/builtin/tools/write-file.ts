import { defineTool, ToolError } from "./define-tool.ts";
import type { ToolContext } from "./tool-context.ts";

/** Creates or overwrites a whole file, with its parent directories. */
export function writeFileTool({ paths, files }: ToolContext) {
  return defineTool({
    description:
      "Create or overwrite a file in the workspace with the given content (parent directories are created).",
    schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        content: { type: "string", description: "The whole new content of the file." },
      },
      required: ["path", "content"],
      additionalProperties: false,
    },
    execute: async (input: { path: string; content: string }) => {
      if (typeof input.content !== "string") throw new ToolError("content must be a string");
      const abs = await paths.resolve(input.path);
      await files.write(abs, input.content);
      return { output: `wrote ${Buffer.byteLength(input.content)} bytes to ${paths.display(abs)}` };
    },
  });
}
