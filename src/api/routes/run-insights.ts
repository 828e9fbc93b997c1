import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply } from "fastify";
import { z } from "zod";
import { harnessUsage } from "../../runs/harness-usage.ts";
import { runConversation } from "../../runs/run-conversation.ts";
import type { RunService } from "../../runs/run-service.ts";
import { runTimeline } from "../../runs/run-timeline.ts";
import type { ArtifactLinks } from "../artifact-links.ts";
import { json, operation, route } from "../operation.ts";
import { NoQuerySchema } from "../schemas/common.ts";
import {
  ConversationResponseSchema,
  HarnessUsageResponseSchema,
  InterruptResponseSchema,
  TimelineResponseSchema,
} from "../schemas/run-insights.ts";
import { signedTeam } from "./artifacts.ts";

export interface RunInsightRoutesOptions {
  runService: Pick<RunService, "get" | "history" | "interrupt" | "transcript">;
  /** Signs the transcript's download links (kind "transcript"). */
  links: ArtifactLinks;
  publicUrl: () => string;
}

const runRead = (id: string, summary: string, path: string, schema: z.ZodType, description: string) =>
  operation({
    id,
    method: "GET",
    path: `/agent/runs/{runId}${path}`,
    tag: "runs",
    summary,
    access: "key",
    query: NoQuerySchema,
    responses: { 200: { description, content: json(schema) } },
    errors: ["invalid_request", "resource_not_found"],
  });

export const runInsightOperations = {
  getRunConversation: runRead(
    "getRunConversation",
    "The run's conversation: one step per execution, messages of text, actions and their results",
    "/conversation",
    ConversationResponseSchema,
    "Built from the transcript; conversation_id is the run's id.",
  ),
  getRunTimeline: runRead(
    "getRunTimeline",
    "The run's lifecycle: created, claimed, agent started, and how each execution ended",
    "/timeline",
    TimelineResponseSchema,
    "Oldest first.",
  ),
  getRunHarnessUsage: runRead(
    "getRunHarnessUsage",
    "Cumulative usage of a Claude Code or Codex run, as the model gateway counted it",
    "/harness-usage",
    HarnessUsageResponseSchema,
    "available: false for other harnesses; a token category Dispatch does not count is absent, never 0.",
  ),
  getRunTranscript: operation({
    id: "getRunTranscript",
    method: "GET",
    path: "/agent/runs/{runId}/transcript",
    tag: "runs",
    summary: "Redirects to a signed link to the run's whole transcript (valid 15 minutes)",
    access: "key",
    query: NoQuerySchema,
    responses: {
      302: {
        description: "Location is the signed link (GET .../transcript/content?team=…&expires=…&signature=…).",
        headers: { Location: z.string() },
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
  getRunTranscriptContent: operation({
    id: "getRunTranscriptContent",
    method: "GET",
    path: "/agent/runs/{runId}/transcript/content",
    tag: "runs",
    summary: "The run's transcript through a signed link (no API key): one event per line",
    access: "signed link",
    responses: {
      200: {
        description: "JSON Lines: each line an event `{seq, at, type, data}`, oldest first.",
        content: { "application/x-ndjson": z.string() },
      },
    },
    errors: ["not_authorized", "resource_not_found"],
  }),
  interruptRun: operation({
    id: "interruptRun",
    method: "POST",
    path: "/agent/runs/{runId}/interrupt",
    tag: "runs",
    summary: "Stops the agent's current turn; the run, its sandbox and workspace stay for a follow-up",
    description:
      "Only a run whose agent is running (INPROGRESS, agent started). The turn stops within seconds; the run then waits for a follow-up up to its idle_timeout_minutes (default 10) and succeeds if none comes.",
    access: "key",
    responses: { 202: { description: "The interrupt is recorded.", content: json(InterruptResponseSchema) } },
    errors: ["invalid_request", "not_authorized", "resource_not_found"],
  }),
};

/** Transcript events read at a time into the download. */
const PAGE = 1000;

/**
 * Reads of a run beyond its RunItem (the Warp Platform API's conversation, timeline, harness usage and
 * transcript download) and its interrupt; all through RunService, so the access rule applies.
 */
export async function runInsightRoutes(app: FastifyInstance, opts: RunInsightRoutesOptions): Promise<void> {
  const { runService, links, publicUrl } = opts;
  const ops = runInsightOperations;

  route(app, ops.getRunConversation, async (req) => {
    const { run, events } = await runService.history(req.caller!, req.params.runId);
    return runConversation(run.id, events);
  });
  route(app, ops.getRunTimeline, async (req) => {
    const { run, events } = await runService.history(req.caller!, req.params.runId);
    return runTimeline(run.id, events);
  });
  route(app, ops.getRunHarnessUsage, async (req) => {
    const { run, events } = await runService.history(req.caller!, req.params.runId);
    return harnessUsage(run, events);
  });
  route(app, ops.getRunTranscript, async (req, reply) => {
    const run = await runService.get(req.caller!, req.params.runId);
    return redirectToTranscript(reply, links.sign(publicUrl(), req.caller!.team.id, run.id).url);
  });
  // The signed link: no API key, so the signature is checked before anything is read.
  route(app, ops.getRunTranscriptContent, async (req, reply) => {
    const runId = req.params.runId;
    signedTeam(links, runId, req.query, "GET /api/v1/agent/runs/{runId}/transcript");
    async function* lines() {
      let after = 0;
      for (;;) {
        const page = await runService.transcript(runId, after, PAGE);
        for (const e of page) yield `${JSON.stringify(e)}\n`;
        if (page.length < PAGE) return;
        after = page.at(-1)!.seq;
      }
    }
    return reply
      .header("content-type", "application/x-ndjson; charset=utf-8")
      .header("content-disposition", `attachment; filename="transcript-${runId}.jsonl"`)
      .header("cache-control", "private, no-store")
      .header("x-content-type-options", "nosniff")
      .send(Readable.from(lines()));
  });
  route(app, ops.interruptRun, async (req, reply) => {
    const run = await runService.interrupt({ caller: req.caller! }, req.params.runId);
    return reply.code(202).send({ run_id: run.id });
  });
}

/** A 302 to the transcript's signed link. */
export function redirectToTranscript(reply: FastifyReply, url: string): FastifyReply {
  return reply.header("cache-control", "no-store").redirect(url, 302);
}

/** Where a run's transcript is served (with a signed query). */
export function transcriptContentPath(runId: string): string {
  return `/api/v1/agent/runs/${encodeURIComponent(runId)}/transcript/content`;
}
