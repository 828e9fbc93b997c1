/**
 * Renders the client's wire types (clients/typescript/src/api-types.ts) from the committed openapi.json,
 * which the server generates from the zod schemas it validates with. test/client/api-types.test.ts
 * regenerates and compares, so an API change the client has not picked up fails the tests; rewrite the
 * file with
 *
 *   node test/client/support/openapi-codegen.ts --write
 *
 * Only the JSON Schema the server emits is handled; anything else is an error rather than a silent
 * `unknown`, so that a new construct gets a deliberate mapping.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

type Schema = Record<string, unknown>;

interface OpenApi {
  paths: Record<string, Record<string, { operationId?: string; parameters?: Parameter[] }>>;
  components: { schemas: Record<string, Schema> };
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: Schema;
}

export const OPENAPI_PATH = fileURLToPath(new URL("../../../openapi.json", import.meta.url));
export const TYPES_PATH = fileURLToPath(
  new URL("../../../clients/typescript/src/api-types.ts", import.meta.url),
);

/** Query parameters rendered as interfaces: operationId → type name. */
const QUERIES: Record<string, string> = {
  listRuns: "ListRunsQuery",
  listRunEvents: "ListRunEventsQuery",
  listEnvironments: "ListEnvironmentsQuery",
  listAgents: "ListAgentsQuery",
};

export function renderApiTypes(doc: OpenApi): string {
  const out: string[] = [
    "// Generated from openapi.json by test/client/support/openapi-codegen.ts; do not edit by hand.",
    "// Regenerate with `node test/client/support/openapi-codegen.ts --write` after `npm run openapi`;",
    "// test/client/api-types.test.ts fails while this file and openapi.json disagree.",
  ];
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    out.push("", declaration(name, schema));
  }
  const operations = Object.values(doc.paths).flatMap((methods) => Object.values(methods));
  for (const [operationId, typeName] of Object.entries(QUERIES)) {
    const op = operations.find((o) => o.operationId === operationId);
    if (!op) throw new Error(`openapi.json has no operation ${operationId}`);
    const params = (op.parameters ?? []).filter((p) => p.in === "query");
    const lines = params.map((p) => `  ${p.name}${p.required ? "" : "?"}: ${queryType(p.schema, 1)};`);
    out.push(
      "",
      `/** Query parameters of ${operationId}; whole numbers travel as strings but are given as numbers. */`,
      `export interface ${typeName} {`,
      ...lines,
      "}",
    );
  }
  return format(`${out.join("\n")}\n`);
}

/** Laid out by the repository's formatter, so the committed file passes `biome check` unchanged. */
function format(source: string): string {
  const biome = fileURLToPath(new URL("../../../node_modules/.bin/biome", import.meta.url));
  const result = spawnSync(biome, ["format", `--stdin-file-path=${TYPES_PATH}`], {
    input: source,
    encoding: "utf8",
  });
  if (result.status !== 0) {
    throw new Error(
      `biome format failed (${result.status ?? result.error}): ${result.stderr}${result.stdout}`,
    );
  }
  return result.stdout;
}

function declaration(name: string, schema: Schema): string {
  if (schema.type === "object" && schema.properties && !schema.oneOf) {
    return `export interface ${name} ${objectBody(schema, 0)}`;
  }
  return `export type ${name} = ${members(schema, 0).join(" | ")};`;
}

function objectBody(schema: Schema, depth: number): string {
  const props = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set((schema.required ?? []) as string[]);
  const pad = "  ".repeat(depth + 1);
  const lines = Object.entries(props).map(
    ([key, value]) =>
      `${pad}${key}${required.has(key) ? "" : "?"}: ${members(value, depth + 1).join(" | ")};`,
  );
  return `{\n${lines.join("\n")}\n${"  ".repeat(depth)}}`;
}

function members(schema: Schema, depth: number): string[] {
  if (typeof schema.$ref === "string") return [schema.$ref.replace("#/components/schemas/", "")];
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Schema[]).flatMap((s) => members(s, depth));
  if (Array.isArray(schema.oneOf)) return (schema.oneOf as Schema[]).flatMap((s) => members(s, depth));
  if ("const" in schema) return [JSON.stringify(schema.const)];
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v));
  if (Array.isArray(schema.type)) return schema.type.flatMap((t) => members({ ...schema, type: t }, depth));
  switch (schema.type) {
    case undefined:
      if (Object.keys(schema).length === 0) return ["unknown"];
      break;
    case "string":
    case "boolean":
    case "null":
      return [schema.type];
    case "integer":
    case "number":
      return ["number"];
    case "array": {
      const item = members(schema.items as Schema, depth);
      return [item.length === 1 && !item[0]!.includes("\n") ? `${item[0]}[]` : `Array<${item.join(" | ")}>`];
    }
    case "object":
      if (schema.properties) return [objectBody(schema, depth)];
      if (schema.additionalProperties !== undefined) {
        const value = members(schema.additionalProperties as Schema, depth);
        return [`Record<string, ${value.join(" | ")}>`];
      }
      break;
  }
  throw new Error(`openapi-codegen: no TypeScript mapping for ${JSON.stringify(schema)}`);
}

function queryType(schema: Schema, depth: number): string {
  if (schema.type === "string" && schema.pattern === "^\\d+$") return "number";
  return members(schema, depth).join(" | ");
}

export function readOpenApi(): OpenApi {
  return JSON.parse(readFileSync(OPENAPI_PATH, "utf8")) as OpenApi;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rendered = renderApiTypes(readOpenApi());
  if (process.argv.includes("--write")) {
    writeFileSync(TYPES_PATH, rendered);
    process.stderr.write(`wrote ${TYPES_PATH}\n`);
  } else {
    process.stdout.write(rendered);
  }
}
