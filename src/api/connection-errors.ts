import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import { ApiError, type ErrorCode, httpOf, problemBody } from "./problem.ts";

/** How much of a refused body is read and thrown away so that its sender gets to read the 413. */
export const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Answers what node's HTTP parser refuses before any route sees the request (headers too large, a request
 * that did not arrive in time, bytes that are not HTTP) as problem+json, like every other error, instead
 * of Fastify's own JSON shape; then closes the connection, since the parser cannot go on.
 */
export function clientErrorHandler(log: Logger) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    const [code, detail]: [ErrorCode, string] =
      err.code === "HPE_HEADER_OVERFLOW"
        ? ["headers_too_large", "the request's headers are over 16 KiB; send fewer or shorter headers"]
        : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? ["request_timeout", "the request did not arrive in time; send it again"]
          : ["invalid_request", "the request is not valid HTTP/1.1"];
    log.debug({ err: { code: err.code } }, "client error");
    if (socket.writable) {
      const { status } = httpOf(new ApiError(code));
      const body = JSON.stringify(problemBody(code, "/", detail));
      socket.write(
        `HTTP/1.1 ${status} ${problemBody(code, "/").title}\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}

/**
 * After a 413, the client is often still sending: closing the connection then would reset it, and most
 * clients report the reset instead of the answer. So the rest of the body is read and discarded up to
 * DISCARD_LIMIT_BYTES and the connection stays usable; a body beyond that bound (or one declared beyond
 * it) closes the connection once the answer is written. The request timeout still bounds how long.
 */
export function discardRefusedBody(req: IncomingMessage): "drain" | "close" {
  const declared = Number(req.headers["content-length"]);
  if (req.complete) return "drain";
  if (Number.isFinite(declared) && declared > DISCARD_LIMIT_BYTES) return "close";
  let seen = 0;
  req.on("data", (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > DISCARD_LIMIT_BYTES) req.socket.destroy();
  });
  req.resume();
  return "drain";
}
