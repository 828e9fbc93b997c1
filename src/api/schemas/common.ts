import { z } from "zod";
import { SKILL_SPEC_PATTERN, VALID_SKILL_SPECS } from "../../model/skill-spec.ts";

/**
 * The wire schemas of API v1 that every area shares. The server validates requests with these schemas
 * and the OpenAPI document is generated from them, so the two cannot disagree.
 */

export const LIMITS = {
  bodyBytes: 1024 * 1024,
  promptChars: 100_000,
  titleChars: 300,
  metadataKeys: 20,
  metadataValueBytes: 256,
  idempotencyKeyChars: 255,
  listDefault: 20,
  listMax: 500,
  eventsDefault: 100,
  eventsMax: 1000,
} as const;

const codePoints = (s: string) => [...s].length;

/** A skill spec, with the pattern parseSkillSpec enforces, so that the document names what is refused. */
export const SkillSpecSchema = z
  .string()
  .min(1)
  .max(500)
  // Enforced by parseSkillSpec (with a finer message than a pattern mismatch), so only documented here.
  .meta({ pattern: SKILL_SPEC_PATTERN, description: `${VALID_SKILL_SPECS}` });

export const boundedText = (max: number, what: string) =>
  z.string().refine((s) => codePoints(s) <= max, { message: `${what} must be at most ${max} characters` });

export const MetadataSchema = z
  .record(
    z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "metadata keys must match [A-Za-z0-9._-]{1,64}"),
    z.string().refine((v) => Buffer.byteLength(v) <= LIMITS.metadataValueBytes, {
      message: `metadata values must be at most ${LIMITS.metadataValueBytes} bytes`,
    }),
  )
  .refine((m) => Object.keys(m).length <= LIMITS.metadataKeys, {
    message: `metadata may have at most ${LIMITS.metadataKeys} keys`,
  });

export const Timestamp = z.string().meta({ format: "date-time" });

/** RFC 3339 with fields in range: the document says exactly which strings the server reads as a time. */
const RFC3339 =
  /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/** A query parameter that is a time, read as UTC with milliseconds. */
export const timestampParam = (name: string) =>
  z
    .string()
    .regex(RFC3339, `${name} must be an RFC 3339 timestamp such as 2026-11-21T05:20:11.123Z`)
    .transform((s) => new Date(s).toISOString());

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    error: z.string(),
    error_code: z.string(),
    retryable: z.boolean(),
    instance: z.string(),
    trace_id: z.string().optional(),
  })
  .meta({ id: "Problem" });

/** A query string that takes no parameters: any parameter is refused by name instead of ignored. */
export const NoQuerySchema = z.strictObject({});

export const booleanParam = (name: string) =>
  z.enum(["true", "false"], { error: `${name} must be true or false` }).transform((v) => v === "true");

/** "config.model_id: Invalid input: expected string" — names the field, as docs/api.md says errors do. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.join(".");
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join("; ");
}
