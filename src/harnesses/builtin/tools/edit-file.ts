import { defineTool, ToolError } from "./define-tool.ts";
import type { ToolContext } from "./tool-context.ts";

/** Replaces an exact string in a file: once, where it is unique, or everywhere when asked. */
export function editFileTool({ limits, paths, files }: ToolContext) {
  return defineTool({
    description:
      "Edit a file by exact string replacement: old_string must occur exactly once in the file (include " +
      "enough surrounding context to make it unique) unless replace_all is true.",
    schema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace." },
        old_string: { type: "string", description: "The exact text to replace." },
        new_string: { type: "string", description: "The replacement text." },
        replace_all: { type: "boolean", description: "Replace every occurrence." },
      },
      required: ["path", "old_string", "new_string"],
      additionalProperties: false,
    },
    execute: async (input: {
      path: string;
      old_string: string;
      new_string: string;
      replace_all?: boolean;
    }) => {
      if (typeof input.old_string !== "string" || input.old_string === "") {
        throw new ToolError("old_string must be a non-empty string (use write_file to create a file)");
      }
      if (typeof input.new_string !== "string") throw new ToolError("new_string must be a string");
      const abs = await paths.resolve(input.path);
      const read = await files.read(abs, limits.maxFileBytes);
      if (read.kind === "too_large") {
        throw new ToolError(
          `${input.path} is ${read.size} bytes, more than edit_file edits (${limits.maxFileBytes}); use shell (sed -i) instead`,
        );
      }
      if (read.kind !== "file") throw new ToolError(`${input.path} does not exist or cannot be read`);
      const text = read.data.toString("utf8");
      const count = text.split(input.old_string).length - 1;
      if (count === 0) throw new ToolError(`old_string was not found in ${input.path}; nothing changed`);
      if (count > 1 && !input.replace_all) {
        throw new ToolError(
          `old_string occurs ${count} times in ${input.path}; add surrounding context to make it unique, or set replace_all; nothing changed`,
        );
      }
      const updated = input.replace_all
        ? text.split(input.old_string).join(input.new_string)
        : text.replace(input.old_string, () => input.new_string);
      await files.write(abs, updated);
      return {
        output: `replaced ${input.replace_all ? count : 1} occurrence${count > 1 && input.replace_all ? "s" : ""} in ${paths.display(abs)}`,
      };
    },
  });
}
