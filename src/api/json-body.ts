import type { FastifyInstance } from "fastify";
import { ApiError } from "./problem.ts";

/**
 * JSON bodies are parsed as Fastify does, refusing keys that reach an object's prototype (`__proto__`,
 * `constructor.prototype`); such a refusal names the key instead of calling valid JSON invalid. An empty
 * body is no body: the official Oz Python SDK sends `Content-Type: application/json` with nothing for
 * cancel and other body-less calls (docs/api.md), and each route decides whether it needs one.
 */
export function acceptJsonBodies(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    if (body === "") return done(null, undefined);
    parse(req, body as string, (err, value) => {
      if (!err) return done(null, value);
      const path = prototypeKeyPath(body as string);
      if (path === undefined) return done(err, undefined);
      done(
        new ApiError(
          "invalid_request",
          `${path}: this key is not accepted, as it would reach JavaScript's object prototype; rename or remove it`,
        ),
        undefined,
      );
    });
  });
}

/** Where `json` has a `__proto__` key or a `constructor` object with a `prototype` key, as a field path. */
function prototypeKeyPath(json: string): string | undefined {
  try {
    // JSON.parse defines "__proto__" as an own property; it changes no prototype.
    return find(JSON.parse(json), []);
  } catch {
    return undefined; // not JSON, or nested too deep to walk: Fastify's own answer stands
  }
}

function find(value: unknown, path: string[]): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  for (const [key, item] of Object.entries(value)) {
    const here = [...path, key];
    if (key === "__proto__") return here.join(".");
    if (
      key === "constructor" &&
      item !== null &&
      typeof item === "object" &&
      Object.hasOwn(item, "prototype")
    ) {
      return [...here, "prototype"].join(".");
    }
    const deeper = find(item, here);
    if (deeper) return deeper;
  }
  return undefined;
}
