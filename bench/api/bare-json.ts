import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { serveBare } from "../support/bare-server.ts";

/**
 * The baselines of the API benchmark: the least a Node.js HTTP JSON endpoint can do to give the same
 * answers as Dispatch. run.ts captures real response bodies from the Dispatch under test (GET of a sample
 * of runs, one list page, one create answer), writes them to the file named by BENCH_BARE_BODIES and
 * starts this script with startBareServer (bench/support/bare-server.ts). Each path answers a body of the
 * same bytes and shape as the scenario it is the baseline of, serialised on every request from the parsed
 * object, as a real handler would:
 *
 *   GET  /get     the captured GET bodies in turn (runs differ in size; the sample has their mix)
 *   GET  /list    the captured list page (20 runs)
 *   POST /create  reads and parses the JSON request body, then answers the captured create answer
 *
 * No storage, no authentication, no routing framework: in particular /create writes nothing, where
 * Dispatch's create is durable (fsync'd, group-committed) before it answers.
 */
interface Bodies {
  get: unknown[];
  list: unknown;
  create: unknown;
  /** The status Dispatch answers a create with. */
  createStatus: number;
}

const file = process.env.BENCH_BARE_BODIES;
if (!file) throw new Error("BENCH_BARE_BODIES must name the JSON file of captured bodies (run.ts writes it)");
const bodies = JSON.parse(readFileSync(file, "utf8")) as Bodies;
if (bodies.get.length === 0) throw new Error(`${file}: no GET bodies captured`);

let next = 0;

function answer(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

function create(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    try {
      JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return answer(res, 400, { error: "body is not JSON" });
    }
    answer(res, bodies.createStatus, bodies.create);
  });
}

serveBare((req, res) => {
  const path = req.url?.split("?")[0];
  if (req.method === "GET" && path === "/get") {
    next = (next + 1) % bodies.get.length;
    return answer(res, 200, bodies.get[next]);
  }
  if (req.method === "GET" && path === "/list") return answer(res, 200, bodies.list);
  if (req.method === "POST" && path === "/create") return create(req, res);
  answer(res, 404, { error: `no route ${req.method} ${path}` });
});
