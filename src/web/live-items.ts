import type { FastifyReply, FastifyRequest } from "fastify";
import type { RunTranscript } from "../api/event-stream.ts";
import type { RunRecord } from "../model/run.ts";
import { type HeaderData, headerData } from "./run-header.ts";
import { readTranscriptPage, type ViewBudget } from "./run-view.ts";
import { renderPlan } from "./transcript-render.ts";

/** What `<page>/items?from=<seq>` answers the live script (live-view-script.ts). */
export interface LiveItems {
  items: Array<{ key: string; seq: number; html: string }>;
  last_seq: number;
  more: boolean;
  /** The plan section's new content, or null when these events hold no plan. */
  plan: string | null;
  usage: Array<{ seq: number; tokens: number; cost_usd: number | null }>;
  execution_from: number;
  header: HeaderData;
  /** The delivery section once the run has finished (its pull request and diff), else null. */
  delivery: string | null;
  /** What the run waits for and its answers (run-gate.ts) on a page that has them, else null. */
  gate: string | null;
}

/**
 * The server's rendering of a run's events from `from` on (within the page's budget), with the header's
 * facts: the route of both the run page and the session page, after each has decided who may read the run.
 */
export async function sendLiveItems(
  req: FastifyRequest,
  reply: FastifyReply,
  runs: Pick<RunTranscript, "transcript">,
  run: RunRecord,
  /** The run read again after its events, so the header is never older than the entries (a final state). */
  reread: () => Promise<RunRecord>,
  budget: Pick<ViewBudget, "events" | "bytes">,
  now: number,
  /** The delivery section of a run, rendered (pull request, diff). */
  delivery: (run: RunRecord) => Promise<string>,
  /** The page's section for a run waiting for a person, rendered; a page without one passes none. */
  gate?: (run: RunRecord) => Promise<string>,
): Promise<FastifyReply> {
  const q = req.query as { from?: string; limit?: string };
  const from = q.from ?? "";
  const limit = q.limit ?? String(budget.events);
  if (!/^\d{1,15}$/.test(from) || Number(from) < 1 || !/^\d{1,6}$/.test(limit) || Number(limit) < 1) {
    return reply
      .code(400)
      .header("cache-control", "no-store")
      .type("text/plain; charset=utf-8")
      .send(
        "from must be the sequence number of a transcript event (1 or more), limit a number of events (1 or more)",
      );
  }
  // The page's script asks for what is left of its budget; never more than a page.
  const events = Math.min(Number(limit), budget.events);
  const page = await readTranscriptPage(
    runs,
    run.id,
    Number(from) - 1,
    { events, bytes: budget.bytes },
    false,
  );
  const fresh = await reread();
  const header = headerData(fresh, now);
  const body: LiveItems = {
    items: page.items,
    last_seq: page.lastSeq,
    more: page.more,
    plan: page.plan ? renderPlan(page.plan) : null,
    usage: page.usage.map((u) => ({ seq: u.seq, tokens: u.tokens, cost_usd: u.costUsd ?? null })),
    execution_from: page.executionFrom,
    header,
    delivery: header.terminal ? await delivery(fresh) : null,
    gate: gate ? await gate(fresh) : null,
  };
  return reply.header("cache-control", "no-store").type("application/json; charset=utf-8").send(body);
}
