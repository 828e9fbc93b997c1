import { jsonSchema, tool } from "ai";
import { formatForModel, type ToolOutput } from "./tool-output.ts";

/** A failure the model is told about in words of its own (bad path, edit not found, …). */
export class ToolError extends Error {}

/** A tool whose failures become an `error` result the model can read, never an exception. */
export function defineTool<I>(spec: {
  description: string;
  schema: Record<string, unknown>;
  execute: (input: I) => Promise<ToolOutput>;
}) {
  return tool({
    description: spec.description,
    inputSchema: jsonSchema<I>(spec.schema as Parameters<typeof jsonSchema>[0]),
    execute: async (input: I): Promise<ToolOutput> => {
      try {
        return await spec.execute(input);
      } catch (err) {
        const message =
          err instanceof ToolError ? err.message : `failed: ${(err as Error).message ?? String(err)}`;
        return { output: `error: ${message}`, error: true };
      }
    },
    toModelOutput: ({ output }) => ({ type: "text", value: formatForModel(output as ToolOutput) }),
  });
}
