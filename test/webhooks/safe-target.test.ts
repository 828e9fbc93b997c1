import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postWebhook } from "../../src/webhooks/post-webhook.ts";
import { checkTarget, refusalOf, TargetRefused } from "../../src/webhooks/safe-target.ts";

/**
 * Where webhooks may go (docs/api.md, "Webhooks"): the address rules, and the check made again as a
 * delivery connects — a name that resolves to loopback is refused at the connection, not only at creation.
 */

let port: number;
let hits = 0;
const server = createServer((_req, res) => {
  hits += 1;
  res.writeHead(302, { location: "http://169.254.169.254/" }).end("moved");
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe("webhook targets", () => {
  it("allow public unicast addresses only, unless private ones are allowed; metadata never", () => {
    for (const address of ["8.8.8.8", "2606:4700::1111"]) expect(refusalOf(address, false)).toBeUndefined();
    for (const [address, words] of [
      ["127.0.0.1", "loopback"],
      ["::1", "loopback"],
      ["::ffff:127.0.0.1", "loopback"],
      ["::ffff:7f00:1", "loopback"],
      ["10.0.0.8", "private"],
      ["172.31.255.1", "private"],
      ["192.168.1.1", "private"],
      ["169.254.10.10", "link-local"],
      ["fe80::1", "link-local"],
      ["fd12::1", "unique-local"],
      ["100.64.0.1", "carrier-grade NAT"],
      ["0.0.0.0", "unspecified"],
      ["224.0.0.1", "multicast"],
      ["64:ff9b::a00:1", "rfc6052"],
    ] as const) {
      expect(refusalOf(address, false), address).toContain(words);
      expect(refusalOf(address, true), address).toBeUndefined();
    }
    for (const metadata of [
      "169.254.169.254",
      "fd00:ec2::254",
      "100.100.100.200",
      "::ffff:169.254.169.254",
    ]) {
      expect(refusalOf(metadata, true), metadata).toMatch(/cloud metadata address/);
    }
  });

  it("refuse a name that resolves to any refused address at creation", async () => {
    const resolve = async () => ["93.184.216.34", "10.0.0.1"];
    await expect(checkTarget("https://mixed.example/hook", { allowPrivate: false, resolve })).rejects.toThrow(
      /mixed\.example is refused: 10\.0\.0\.1 is a private address/,
    );
    const gone = async () => {
      throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    };
    await expect(
      checkTarget("https://nowhere.example/", { allowPrivate: false, resolve: gone }),
    ).rejects.toThrow(/could not be resolved \(ENOTFOUND\)/);
    const ok = await checkTarget("https://public.example/hook", {
      allowPrivate: false,
      resolve: async () => ["8.8.4.4"],
    });
    expect(ok.hostname).toBe("public.example");
  });

  it("refuse the connection when a name resolves to loopback at send time, before any request", async () => {
    const sent = hits;
    const attempt = postWebhook(new URL(`http://localhost:${port}/hook`), {}, "{}", {
      timeoutMs: 5_000,
      allowPrivate: false,
      signal: new AbortController().signal,
    });
    await expect(attempt).rejects.toBeInstanceOf(TargetRefused);
    await expect(attempt).rejects.toThrow(/refused: .* is a loopback address/);
    expect(hits).toBe(sent);
  });

  it("do not follow redirects: a 3xx is the answer", async () => {
    const answer = await postWebhook(new URL(`http://localhost:${port}/hook`), {}, "{}", {
      timeoutMs: 5_000,
      allowPrivate: true,
      signal: new AbortController().signal,
    });
    expect(answer).toEqual({ status: 302, excerpt: "moved" });
  });
});
