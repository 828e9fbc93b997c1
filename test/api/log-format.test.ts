import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { createLogger, prettyWanted } from "../../src/log.ts";
import { startTestDispatch } from "../support/dispatch.ts";

function sink(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  return { lines, stream };
}

describe("log format", () => {
  it("is pretty only for a terminal outside CI", () => {
    expect(prettyWanted({ isTTY: true }, {})).toBe(true);
    expect(prettyWanted({ isTTY: false }, {})).toBe(false);
    expect(prettyWanted({}, {})).toBe(false);
    expect(prettyWanted({ isTTY: true }, { CI: "true" })).toBe(false);
    expect(prettyWanted({ isTTY: true }, { CI: "false" })).toBe(true);
  });

  it("writes JSON lines to a stream that is not a terminal, and pretty lines when told to, secrets redacted in both", () => {
    const key = `dsp_${"K".repeat(40)}`;
    const json = sink();
    createLogger("info", json.stream).info({ detail: `uses ${key}` }, "hello");
    expect(JSON.parse(json.lines[0]!)).toMatchObject({ msg: "hello", service: "dispatch" });

    const pretty = sink();
    createLogger("info", pretty.stream, { format: "pretty" }).info({ detail: `uses ${key}` }, "hello");
    const text = pretty.lines.join("\n");
    expect(text).toContain("hello");
    expect(() => JSON.parse(pretty.lines[0]!)).toThrow();
    for (const out of [json.lines.join("\n"), text]) {
      expect(out).toContain("dsp_[redacted]");
      expect(out).not.toContain("K".repeat(40));
    }
  });

  it("refuses an unknown DISPATCH_LOG_FORMAT or DISPATCH_ACCESS_LOG, naming the setting", () => {
    expect(() => loadConfig({ DISPATCH_LOG_FORMAT: "yaml" })).toThrow(/DISPATCH_LOG_FORMAT/);
    expect(() => loadConfig({ DISPATCH_ACCESS_LOG: "some" })).toThrow(/DISPATCH_ACCESS_LOG/);
  });
});

describe("access log", () => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  async function serve(accessLog: string | undefined, level: string) {
    const logs: string[] = [];
    const t = await startTestDispatch(
      { DISPATCH_MAX_CONCURRENT_RUNS: "0", ...(accessLog ? { DISPATCH_ACCESS_LOG: accessLog } : {}) },
      { logs, logLevel: level },
    );
    cleanup = () => t.stop();
    const get = async (path: string) => (await t.api("GET", path)).status;
    const accessLines = () =>
      logs.map((l) => JSON.parse(l)).filter((r) => typeof r.status === "number" && r.method);
    return { get, accessLines };
  }

  it("by default logs no line per successful request at info level", async () => {
    const s = await serve(undefined, "info");
    expect(await s.get("/api/v1/agent/runs")).toBe(200);
    expect(await s.get("/api/v1/agent/runs/no-such-run")).toBe(404);
    expect(s.accessLines()).toEqual([]);
  });

  it("by default logs every request at debug level, with its request id", async () => {
    const s = await serve(undefined, "debug");
    expect(await s.get("/api/v1/agent/runs")).toBe(200);
    const [line] = s.accessLines();
    expect(line).toMatchObject({ level: 20, method: "GET", status: 200, url: "/api/v1/agent/runs" });
    expect(line.reqId).toEqual(expect.any(String));
  });

  it("with all, logs every request at info; with off, none even at debug", async () => {
    const all = await serve("all", "info");
    await all.get("/api/v1/agent/runs");
    await all.get("/api/v1/agent/runs/no-such-run");
    expect(all.accessLines().map((r) => [r.level, r.status])).toEqual([
      [30, 200],
      [30, 404],
    ]);
    await cleanup?.();
    cleanup = undefined;

    const off = await serve("off", "debug");
    await off.get("/api/v1/agent/runs");
    expect(off.accessLines()).toEqual([]);
  });
});
