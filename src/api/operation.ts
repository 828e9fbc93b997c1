import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { gatherBracketed, parseBody, parseQuery } from "./parse.ts";
import type { ErrorCode } from "./problem.ts";
import { inRequestSpan } from "./request-trace.ts";

/**
 * One operation of API v1, declared once: the route is registered from it (method, path, who may call it,
 * the body and query it validates) and the OpenAPI document is generated from it (openapi.ts), so the
 * two cannot disagree.
 */
export interface Operation {
  /** The OpenAPI operationId, which the SDKs name their methods after. */
  id: string;
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** Below /api/v1, with `{name}` for each path parameter (always a string). */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  /**
   * Who may call it: anyone, an API key, an admin key, or whoever holds a signed link: its query is
   * SignedLinkQuerySchema, which the route checks as a signature (403 when bad, not a 400).
   */
  access: "public" | "key" | "admin" | "signed link";
  /** Takes an Idempotency-Key header (the route reads it with idempotencyKey). */
  idempotent?: boolean;
  /** The JSON object body; when not `required`, a request without a body is accepted as none. */
  body?: { schema: z.ZodType; required: boolean };
  /** The query string's parameters; an object field travels as `name[key]=value`. */
  query?: z.ZodObject;
  /** Request headers the route reads, beyond authorization and Idempotency-Key. */
  headers?: Record<string, z.ZodType>;
  /** Answers other than problems, by status: the body's schema by media type, and response headers. */
  responses: Record<
    number,
    { description: string; content?: Record<string, z.ZodType>; headers?: Record<string, z.ZodType> }
  >;
  /** The problems (application/problem+json) this operation answers besides those every keyed route can. */
  errors: ErrorCode[];
}

/** An Operation, its literal types kept so that routes get typed path parameters, body and query. */
export function operation<const O extends Operation>(op: O): O {
  return op;
}

/** `{ "application/json": schema }`: the usual response content. */
export const json = (schema: z.ZodType) => ({ "application/json": schema });

/** `{runId: string}` for "/agent/runs/{runId}". */
type PathParams<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? { [K in Name]: string } & PathParams<Rest>
  : unknown;

/** What a route's handler gets, validated: the body (undefined when optional and absent) and the query. */
export interface Input<O extends Operation> {
  body: O["body"] extends { schema: infer S extends z.ZodType; required: infer R }
    ? R extends true
      ? z.output<S>
      : z.output<S> | undefined
    : undefined;
  query: O["query"] extends z.ZodObject ? z.output<O["query"]> : undefined;
}

type Handler<O extends Operation> = (
  req: FastifyRequest<{ Params: PathParams<O["path"]> }>,
  reply: FastifyReply,
  input: Input<O>,
) => unknown;

/** A query parameter as the document describes it and the route reads it. */
export interface QueryField {
  name: string;
  schema: Record<string, unknown>;
  required: boolean;
  /** An object, sent as `name[key]=value` (OpenAPI's deepObject style, the SDKs' bracket notation). */
  deepObject: boolean;
}

/** The query parameters of `schema`, in JSON Schema, as a client sends them. */
export function queryFields(schema: z.ZodObject): QueryField[] {
  return Object.entries(schema.shape).map(([name, field]) => {
    const fieldSchema = z.toJSONSchema(field as z.ZodType, { io: "input", unrepresentable: "any" });
    delete fieldSchema.$schema;
    return {
      name,
      schema: fieldSchema,
      required: !(field as z.ZodType).safeParse(undefined).success,
      deepObject: fieldSchema.type === "object",
    };
  });
}

/** Registers `op` on `app` under /api/v1, validating its body and query before `handler` runs. */
export function route<const O extends Operation>(
  app: FastifyInstance,
  op: O,
  handler: Handler<O>,
  options: { bodyLimit?: number; keyCheckedByWrite?: boolean } = {},
): void {
  const { body, query } = op;
  const bracketed = query
    ? queryFields(query)
        .filter((f) => f.deepObject)
        .map((f) => f.name)
    : [];
  const readQuery = (raw: unknown) => {
    if (!query) return undefined;
    return parseQuery(
      query,
      bracketed.reduce((q, name) => gatherBracketed(q, name), raw),
    );
  };
  const readBody = (raw: unknown) => {
    if (!body || (raw === undefined && !body.required)) return undefined;
    return parseBody(body.schema, raw);
  };
  app.route<{ Params: PathParams<O["path"]> }>({
    method: op.method,
    url: `/api/v1${op.path.replace(/\{(\w+)\}/g, ":$1")}`,
    config: {
      auth: op.access === "key" || op.access === "admin",
      admin: op.access === "admin",
      keyCheckedByWrite: options.keyCheckedByWrite === true,
    },
    ...(options.bodyLimit !== undefined ? { bodyLimit: options.bodyLimit } : {}),
    // Async, as every route's handler: a refusal thrown while reading the input becomes its problem answer.
    handler: async (req, reply) =>
      inRequestSpan(req, () =>
        handler(req, reply, { body: readBody(req.body), query: readQuery(req.query) } as Input<O>),
      ),
  });
}
