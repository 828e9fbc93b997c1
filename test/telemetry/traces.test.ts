import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import { FakeGitHub } from "../support/fake-github.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { deliveryEnv, GitRemotes } from "../support/git-remotes.ts";
import {
  killAgentProcesses,
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";

/**
 * Traces (docs/runtime.md, "Traces"): a real `dispatch serve` with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
 * a loopback OTLP/HTTP collector (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) runs a builtin-harness run
 * against a fake Anthropic model, in a repository it delivers to as a pull request. The collector gets one
 * trace for the execution — workspace, each model call with GenAI attributes, each tool call, delivery
 * (git push, GitHub) — linked to the span of the request that created the run, and the notifier's sends;
 * no prompt or output is exported.
 */

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; arrayValue?: unknown };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: OtlpAttribute[];
  links?: Array<{ traceId: string; spanId: string }>;
}

/** Its first line becomes the run's title (and branch name); the rest is only in the prompt. */
const PROMPT = "Write hello.txt saying hi\nThe password is aubergine";
let collector: Server;
const spans: OtlpSpan[] = [];
const paths: string[] = [];
let fake: FakeModel;
let github: FakeGitHub;
let remotes: GitRemotes;
let server: ServerProcess;
let dataDir: string;

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      paths.push(`${req.method} ${req.url} ${req.headers["content-type"]}`);
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) spans.push(...((ss.spans ?? []) as OtlpSpan[]));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  const turns: ScriptedTurn[] = [
    {
      calls: [{ name: "write_file", input: { path: "hello.txt", content: "hi\n" } }],
      usage: { input_tokens: 120, output_tokens: 30 },
    },
    { text: "Wrote hello.txt.", usage: { input_tokens: 160, output_tokens: 12 } },
  ];
  fake = await startFakeModel(turns);
  remotes = new GitRemotes();
  remotes.create("acme/app", { "README.md": "app\n" });
  github = await new FakeGitHub().start();
  github.gitRoot = remotes.root;
  dataDir = await mkdtemp(join(tmpdir(), "dispatch-traces-"));
  server = await startServerProcess({
    dataDir,
    key: newAdminKey(),
    startTimeoutMs: 30_000,
    env: {
      ...deliveryEnv(remotes, github),
      ANTHROPIC_API_KEY: "sk-test",
      ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_SERVICE_NAME: "dispatch-under-test",
    },
  });
}, 60_000);

afterAll(async () => {
  if (server) await stopServerProcess(server);
  if (dataDir) {
    await killAgentProcesses(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  }
  await github?.stop();
  remotes?.remove();
  await fake?.close();
  await new Promise((resolve) => collector?.close(resolve));
}, 30_000);

const attr = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  return value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue);
};

describe("OpenTelemetry traces", () => {
  it("exports one trace per execution with workspace, model, tool, delivery spans, linked to its request", async () => {
    const created = await server.api("POST", "/api/v1/agent/runs", {
      prompt: PROMPT,
      config: { model_id: "anthropic/claude-sonnet-4-5", repository: "acme/app", delivery: "pull_request" },
    });
    expect(created.status, created.text).toBe(200);
    const runId: string = created.body.run_id;
    const run = await waitFor(
      async () => {
        const r = (await server.api("GET", `/api/v1/agent/runs/${runId}`)).body;
        return ["SUCCEEDED", "FAILED", "ERROR"].includes(r.state) ? r : undefined;
      },
      { timeoutMs: 60_000, what: "the run to finish" },
    );
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");

    const root = await waitFor(
      () => spans.find((s) => s.name === "execute run" && attr(s, "dispatch.run.id") === runId),
      { timeoutMs: 30_000, what: "the execution's root span" },
    );
    const inTrace = () => spans.filter((s) => s.traceId === root.traceId);
    await waitFor(() => inTrace().some((s) => s.name === "github pull request"), {
      timeoutMs: 30_000,
      what: "the delivery spans",
    });
    const trace = inTrace();
    expect(paths.every((p) => p.startsWith("POST /v1/traces application/json"))).toBe(true);
    expect(root.parentSpanId || undefined).toBeUndefined();
    expect(attr(root, "dispatch.run.state")).toBe("SUCCEEDED");
    expect(attr(root, "gen_ai.usage.input_tokens")).toBe(280);

    // Children of the execution: the workspace, two model calls, one tool call, delivery.
    const children = (name: string) => trace.filter((s) => s.name === name);
    expect(children("prepare workspace")).toHaveLength(1);
    const calls = children("chat claude-sonnet-4-5");
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call.parentSpanId).toBe(root.spanId);
      expect(attr(call, "gen_ai.operation.name")).toBe("chat");
      expect(attr(call, "gen_ai.provider.name")).toBe("anthropic");
      expect(attr(call, "gen_ai.request.model")).toBe("claude-sonnet-4-5");
      expect(attr(call, "dispatch.cost_usd")).toBeGreaterThan(0);
    }
    expect(
      calls.map((c) => [attr(c, "gen_ai.usage.input_tokens"), attr(c, "gen_ai.usage.output_tokens")]),
    ).toEqual([
      [120, 30],
      [160, 12],
    ]);
    const [tool] = children("execute_tool write_file");
    expect(attr(tool!, "gen_ai.operation.name")).toBe("execute_tool");
    expect(attr(tool!, "gen_ai.tool.name")).toBe("write_file");
    expect(attr(tool!, "gen_ai.tool.call.id")).toBeTruthy();
    const [deliver] = children("deliver changes");
    expect(attr(deliver!, "dispatch.delivery.outcome")).toBe("delivered");
    expect(children("git push")[0]!.parentSpanId).toBe(deliver!.spanId);
    expect(children("github pull request")[0]!.parentSpanId).toBe(deliver!.spanId);

    // The request that created the run links to the execution, from a trace of its own.
    const request = spans.find((s) => s.name === "POST /api/v1/agent/runs");
    expect(request).toBeDefined();
    expect(root.links).toEqual([
      expect.objectContaining({ traceId: request!.traceId, spanId: request!.spanId }),
    ]);
    expect(request!.traceId).not.toBe(root.traceId);

    // The notifier's sends (the pull request's card) are spans too.
    await waitFor(
      () => spans.find((s) => s.name === "notifier send github" && attr(s, "dispatch.run.id") === runId),
      { timeoutMs: 30_000, what: "a notifier send span" },
    );

    // Prompts and outputs are not exported.
    const exported = JSON.stringify(spans);
    expect(exported).not.toContain("aubergine");
    expect(exported).not.toContain("Wrote hello.txt");
    expect(exported).not.toContain("gen_ai.output.messages");
  }, 120_000);
});
