import { z } from "zod";
import pkg from "../../package.json" with { type: "json" };
import { type Operation, queryFields } from "./operation.ts";
import { ERROR_CODES, type ErrorCode } from "./problem.ts";
import { agentOperations } from "./routes/agents.ts";
import { artifactOperations } from "./routes/artifacts.ts";
import { attachmentOperations } from "./routes/attachments.ts";
import { auditOperations } from "./routes/audit.ts";
import { conversationOperations } from "./routes/conversations.ts";
import { environmentOperations } from "./routes/environments.ts";
import { identityOperations } from "./routes/identities.ts";
import { modelOperations } from "./routes/models.ts";
import { networkingOperations } from "./routes/networking.ts";
import { redirectOperations } from "./routes/redirects.ts";
import { runApprovalOperations } from "./routes/run-approval.ts";
import { runBudgetOperations } from "./routes/run-budget.ts";
import { runInsightOperations } from "./routes/run-insights.ts";
import { runOperations } from "./routes/runs.ts";
import { scheduleOperations } from "./routes/schedules.ts";
import { usageOperations } from "./routes/usage.ts";
import { webhookOperations } from "./routes/webhooks.ts";
import { SignedLinkQuerySchema } from "./schemas/artifacts.ts";
import { LIMITS, ProblemSchema } from "./schemas/common.ts";

type Json = Record<string, unknown>;

/** Every operation of API v1, in the document's order. */
const OPERATIONS: Operation[] = [
  runOperations,
  runInsightOperations,
  runApprovalOperations,
  runBudgetOperations,
  conversationOperations,
  redirectOperations,
  modelOperations,
  environmentOperations,
  agentOperations,
  scheduleOperations,
  identityOperations,
  artifactOperations,
  attachmentOperations,
  networkingOperations,
  webhookOperations,
  auditOperations,
  usageOperations,
].flatMap((ops) => Object.values(ops));

/** What any route that needs a key may answer, whatever it does. */
const KEYED_ROUTE_ERRORS: ErrorCode[] = [
  "authentication_required",
  "not_authorized",
  "request_timeout",
  "headers_too_large",
  "rate_limited",
  "internal_error",
  "resource_unavailable",
];

/** The schema a route validates with, as JSON Schema: a reference when it has an id (a component). */
function schemaOf(schema: z.ZodType): Json {
  const id = z.globalRegistry.get(schema)?.id;
  if (id) return { $ref: `#/components/schemas/${id}` };
  const inline = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Json;
  delete inline.$schema;
  return inline;
}

const contentOf = (content: Record<string, z.ZodType>) =>
  Object.fromEntries(Object.entries(content).map(([type, schema]) => [type, { schema: schemaOf(schema) }]));

/** Problem responses by status; codes sharing a status share one response naming them all. */
function problems(codes: ErrorCode[]): Json {
  const out: Json = {};
  for (const code of codes) {
    const { status, title } = ERROR_CODES[code];
    const existing = out[String(status)] as { description: string } | undefined;
    out[String(status)] = {
      description: existing ? `${existing.description}; ${title}` : `${title} (${code})`,
      content: { "application/problem+json": { schema: schemaOf(ProblemSchema) } },
    };
  }
  return out;
}

const headerParameter = (name: string, schema: z.ZodType, description?: string) => ({
  name,
  in: "header",
  required: false,
  schema: schemaOf(schema),
  ...(description ? { description } : {}),
});

function parameters(op: Operation): Json[] {
  const query = (schema: z.ZodObject) =>
    queryFields(schema).map((field) => ({
      name: field.name,
      in: "query",
      required: field.required,
      ...(field.deepObject ? { style: "deepObject", explode: true } : {}),
      schema: field.schema,
    }));
  return [
    ...[...op.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
      name,
      in: "path",
      required: true,
      schema: { type: "string" },
    })),
    ...(op.idempotent
      ? [
          headerParameter(
            "Idempotency-Key",
            z.string().min(1).max(LIMITS.idempotencyKeyChars),
            "Same key and equal body within 24 h returns the original response and creates nothing.",
          ),
        ]
      : []),
    ...(op.query ? query(op.query) : []),
    ...(op.access === "signed link" ? query(SignedLinkQuerySchema) : []),
    ...Object.entries(op.headers ?? {}).map(([name, schema]) => headerParameter(name, schema)),
  ];
}

function operationObject(op: Operation): Json {
  const params = parameters(op);
  const keyed = op.access === "key" || op.access === "admin";
  const responses = Object.fromEntries(
    Object.entries(op.responses).map(([status, { description, content, headers }]) => [
      status,
      {
        description,
        ...(content ? { content: contentOf(content) } : {}),
        ...(headers
          ? {
              headers: Object.fromEntries(
                Object.entries(headers).map(([name, schema]) => [name, { schema: schemaOf(schema) }]),
              ),
            }
          : {}),
      },
    ]),
  );
  return {
    operationId: op.id,
    tags: [op.tag],
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    ...(keyed ? {} : { security: [] }),
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: op.body.required,
            content: contentOf({ "application/json": op.body.schema }),
          },
        }
      : {}),
    responses: { ...responses, ...problems(op.errors), ...(keyed ? problems(KEYED_ROUTE_ERRORS) : {}) },
  };
}

/** The OpenAPI 3.1 document of API v1, generated from the operations the server registers its routes from. */
export function buildOpenApiDocument(): Json {
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    io: "input",
    target: "draft-2020-12",
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: "any",
  }) as { schemas: Record<string, Json> };
  for (const schema of Object.values(schemas)) delete schema.$schema;

  const paths: Record<string, Json> = {};
  for (const op of OPERATIONS) {
    paths[op.path] = { ...paths[op.path], [op.method.toLowerCase()]: operationObject(op) };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "Dispatch API",
      version: pkg.version,
      description:
        "Agent runs: create, list, get, follow up, cancel and stream transcripts. Compatible with the Oz Agent API v1.",
    },
    servers: [{ url: "/api/v1" }],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "dsp_ API key" } },
      // Sorted, so that the document does not depend on the order modules happen to be loaded in.
      schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => (a < b ? -1 : 1))),
    },
  };
}
