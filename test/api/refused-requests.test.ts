import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch();
});
afterAll(async () => {
  await t.stop();
});

/** One keep-alive connection that sends raw bytes and reads whole HTTP/1.1 answers off it. */
class RawConnection {
  private readonly socket: Socket;
  private buffered = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  closed = false;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.on("data", (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.waiter?.();
    });
    this.socket.on("error", () => {});
    this.socket.on("close", () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  /** Writes everything, waiting for the socket to drain: fails if the server resets the connection. */
  async send(bytes: Buffer | string): Promise<void> {
    const data = typeof bytes === "string" ? Buffer.from(bytes) : bytes;
    for (let at = 0; at < data.length; at += 64 * 1024) {
      if (this.closed) throw new Error(`connection closed after ${at} of ${data.length} bytes`);
      const ok = this.socket.write(data.subarray(at, at + 64 * 1024));
      if (!ok) await new Promise<void>((resolve) => this.socket.once("drain", () => resolve()));
    }
  }

  /** The next answer: status, headers (lower-cased) and body, read by its Content-Length. */
  async answer(): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    for (;;) {
      const end = this.buffered.indexOf("\r\n\r\n");
      if (end >= 0) {
        const [statusLine = "", ...lines] = this.buffered.subarray(0, end).toString().split("\r\n");
        const headers = Object.fromEntries(
          lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
        );
        const length = Number(headers["content-length"] ?? 0);
        if (this.buffered.length >= end + 4 + length) {
          const body = this.buffered.subarray(end + 4, end + 4 + length).toString();
          this.buffered = this.buffered.subarray(end + 4 + length);
          return { status: Number(statusLine.split(" ")[1]), headers, body };
        }
      }
      if (this.closed)
        throw new Error(`connection closed; received: ${this.buffered.toString().slice(0, 200)}`);
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

describe("requests refused before a route runs", () => {
  it("answers a body over the limit with 413 problem+json while the client is still sending, and keeps the connection usable", async () => {
    const conn = new RawConnection(t.url);
    try {
      const body = Buffer.alloc(3 * 1024 * 1024, "x");
      await conn.send(
        `POST /api/v1/agent/identities HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      // The whole body goes out without a reset, although the server refused it after the first MiB.
      await conn.send(body);
      const refused = await conn.answer();
      expect(refused.status).toBe(413);
      expect(refused.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(refused.body)).toMatchObject({ error_code: "payload_too_large", status: 413 });

      await conn.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      expect((await conn.answer()).status).toBe(200);
    } finally {
      conn.close();
    }
  });

  it("answers a chunked body that grows over the limit with 413 as well", async () => {
    const conn = new RawConnection(t.url);
    try {
      await conn.send(
        `POST /api/v1/agent/identities HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.key}\r\n` +
          "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
      );
      const chunk = Buffer.alloc(256 * 1024, "y");
      for (let i = 0; i < 8; i++)
        await conn.send(Buffer.concat([Buffer.from("40000\r\n"), chunk, Buffer.from("\r\n")]));
      await conn.send("0\r\n\r\n");
      const refused = await conn.answer();
      expect(refused.status).toBe(413);
      expect(JSON.parse(refused.body).error_code).toBe("payload_too_large");
    } finally {
      conn.close();
    }
  });

  it("answers headers over the limit with 431 problem+json", async () => {
    const conn = new RawConnection(t.url);
    try {
      await conn.send(
        `GET /api/v1/agent/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
      );
      const answer = await conn.answer();
      expect(answer.status).toBe(431);
      expect(answer.headers["content-type"]).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(answer.body)).toMatchObject({ error_code: "headers_too_large", status: 431 });
    } finally {
      conn.close();
    }
  });

  it("answers a method a route lacks with 405 and Allow, QUERY without a Content-Type included", async () => {
    for (const method of ["QUERY", "PATCH", "PUT", "DELETE"]) {
      const res = await fetch(`${t.url}/api/v1/agent/runs`, {
        method,
        headers: { authorization: `Bearer ${t.key}` },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("POST, GET, HEAD");
      expect((await res.json()).error_code).toBe("method_not_allowed");
    }
  });

  it("answers an unknown route with 404 without reading its body", async () => {
    const res = await fetch(`${t.url}/api/v1/nothing-here`, {
      method: "POST",
      headers: { "content-type": "text/csv" },
      body: "a,b",
    });
    expect(res.status).toBe(404);
    expect((await res.json()).error_code).toBe("resource_not_found");
  });
});
