import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boundedDownload, type DownloadPolicy } from "../../src/integrations/attachments/bounded-download.ts";
import { PNG_1x1 } from "../attachments/images.ts";

// The download the integrations use for Slack files and GitHub images, against real loopback servers:
// a redirect is followed only to an allowed host, the token never leaves the hosts that take it, and a
// body past the limit is cut off.

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function serve(handler: Handler): Promise<{ server: Server; origin: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.url} ${req.headers.authorization ?? "-"}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe("boundedDownload", () => {
  let platform: Awaited<ReturnType<typeof serve>>;
  let storage: Awaited<ReturnType<typeof serve>>;
  let outsider: Awaited<ReturnType<typeof serve>>;
  let policy: DownloadPolicy;

  beforeAll(async () => {
    storage = await serve((_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(PNG_1x1));
    outsider = await serve((_req, res) => res.writeHead(200).end(PNG_1x1));
    platform = await serve((req, res) => {
      if (req.url === "/to-storage") res.writeHead(302, { location: `${storage.origin}/signed?jwt=x` }).end();
      else if (req.url === "/to-outsider") res.writeHead(302, { location: `${outsider.origin}/x.png` }).end();
      else if (req.url === "/big") res.writeHead(200).end(Buffer.alloc(2048));
      else res.writeHead(404).end();
    });
    policy = {
      allowed: (url) => url.origin === platform.origin || url.origin === storage.origin,
      tokenFor: (url) => (url.origin === platform.origin ? "Bearer secret-token" : undefined),
      maxBytes: 1024,
      timeoutMs: 10_000,
    };
  });
  afterAll(async () => {
    for (const s of [platform, storage, outsider]) {
      await new Promise<void>((resolve) => s?.server.close(() => resolve()));
    }
  });

  it("follows a redirect to an allowed host without the token", async () => {
    const got = await boundedDownload(`${platform.origin}/to-storage`, policy);
    expect(got).toMatchObject({ ok: true, contentType: "image/png" });
    expect(got.ok && Buffer.from(got.bytes)).toEqual(PNG_1x1);
    expect(platform.seen).toContain("/to-storage Bearer secret-token");
    expect(storage.seen).toEqual(["/signed?jwt=x -"]);
  });

  it("never requests a host that is not allowed, first or after a redirect", async () => {
    expect(await boundedDownload(`${outsider.origin}/x.png`, policy)).toMatchObject({
      ok: false,
      reason: "not_allowed",
    });
    expect(await boundedDownload(`${platform.origin}/to-outsider`, policy)).toMatchObject({
      ok: false,
      reason: "not_allowed",
    });
    expect(outsider.seen).toEqual([]);
  });

  it("stops at the byte limit and reports HTTP errors", async () => {
    expect(await boundedDownload(`${platform.origin}/big`, policy)).toEqual({
      ok: false,
      reason: "too_large",
    });
    expect(await boundedDownload(`${platform.origin}/missing`, policy)).toEqual({
      ok: false,
      reason: "http",
      status: 404,
    });
  });
});
