import { randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type RunTranscript, resumeAfter, streamRunEvents } from "../api/event-stream.ts";
import { httpOf } from "../api/problem.ts";
import { describeIssues, LIMITS } from "../api/schemas/common.ts";
import { ApproveRunRequestSchema } from "../api/schemas/run-approval.ts";
import { BudgetRequestSchema } from "../api/schemas/run-budget.ts";
import { FollowupRequestSchema } from "../api/schemas/runs.ts";
import { RunError } from "../model/errors.ts";
import type { RunRecord } from "../model/run.ts";
import { isTerminal } from "../model/run-state.ts";
import { stallNote } from "../model/stall.ts";
import type { WebSession } from "../model/web-session.ts";
import type { BudgetRequest, RunBudgets } from "../runs/budget-answer.ts";
import { answerPlan, type PlanAnswer } from "../runs/plan-approval.ts";
import { retryInput } from "../runs/retry.ts";
import { creatorOf } from "../runs/run-audit.ts";
import type { RunService } from "../runs/run-service.ts";
import type { Store } from "../store/store.ts";
import { readCookie, SESSION_COOKIE } from "./auth/cookies.ts";
import { formOf, hasCsrf, sendForbidden, sessionOf } from "./auth/sign-in-routes.ts";
import type { WebSignIn } from "./auth/web-sign-in.ts";
import { escapeHtml, sendPage } from "./html.ts";
import { sendLiveItems } from "./live-items.ts";
import { liveViewScript } from "./live-view-script.ts";
import { runEquivalents } from "./run-equivalents.ts";
import { extendForm, RUN_GATE_STYLE, readGate, renderGate, reviseForm } from "./run-gate.ts";
import { RUN_HEADER_STYLE } from "./run-header.ts";
import {
  COPY_SCRIPT,
  canAct,
  followupForm,
  RUN_PAGE_STYLE,
  renderCancelConfirm,
  renderRefusal,
  renderRunPage,
  runFacts,
} from "./run-page-view.ts";
import {
  type AttachmentSource,
  readAttachments,
  readDelivery,
  readTranscriptPage,
  renderAttachments,
  renderDelivery,
  runViewStyle,
} from "./run-view.ts";

/**
 * What the run page shows of a run at once. It must stay well under 100 KB for a typical run: a long
 * transcript pages ("Later events"), a large patch is cut (`dispatch diff` prints it whole).
 */
export const RUN_PAGE_BUDGET = { events: 300, bytes: 64 * 1024, patchBytes: 24 * 1024, diffLines: 120 };
const SCRIPT = liveViewScript(RUN_PAGE_BUDGET) + COPY_SCRIPT;

/** Notices after a form's 303, by the `done` parameter. */
const NOTICES: Record<string, string> = {
  followup: "Follow-up sent.",
  cancel: "Run cancelled.",
  approved: "Plan approved: the run carries it out.",
  revised: "Changes requested: the agent revises its plan, which will wait for you again.",
  extended: "Budget extended: the run continues.",
  stopped: "Stopped here: the run delivers what it has.",
  retried: "Started again: this is the new run (the one retried was cancelled if it was still running).",
};
/** The retry form's one-time key: a second submission of the same form starts no second run. */
const RETRY_KEY = /^[0-9a-f]{32}$/;

export interface RunPageOptions {
  signIn: WebSignIn;
  runService: Pick<
    RunService,
    "get" | "getToSteer" | "followup" | "cancel" | "create" | "history" | "replayedAnswer"
  > &
    RunTranscript;
  /** Answers to a run that waits for budget: who may, and how far, is RunBudgets' rule. */
  budgets: Pick<RunBudgets, "answer">;
  store: Pick<Store, "readArtifactHead" | "getThreadBinding" | "getCardState" | "bindThread">;
  attachments?: AttachmentSource;
  /** Base of the API for the page's curl and CLI lines; the request's own origin when empty. */
  publicUrl: () => string;
  /** DISPATCH_STALL_AFTER_S in ms. */
  stallAfterMs: number;
  /** How often an open event stream checks that its session still sees the run. */
  streamAccessCheckMs: number;
}

/**
 * GET /runs/<id>: one of the signed-in team's runs, with what its session page shows plus a follow-up
 * box, Cancel (confirmed on its own page, so it works without JavaScript), a waiting run's Approve and
 * Request changes (run-gate.ts), and the CLI and curl lines that do the same. Another team's run and an unknown id are the same 404; a visitor is sent to sign in
 * (the session link, not the run id, is what lets a visitor read a run). Every POST needs a signed-in
 * session, its CSRF token and a role that may act; the run service decides the rest and its refusals
 * are shown in its words.
 */
export async function runPage(app: FastifyInstance, opts: RunPageOptions): Promise<void> {
  const { signIn, runService } = opts;

  /** The session and its team's run, or the reply already sent (sign-in redirect, 404). */
  const open = async (
    req: FastifyRequest<{ Params: { runId: string } }>,
    reply: FastifyReply,
  ): Promise<{ session: WebSession; run: RunRecord } | FastifyReply> => {
    const session = await sessionOf(req, signIn);
    if (!session) return reply.header("cache-control", "no-store").redirect("/", 303);
    const run = await teamRun(session, req.params.runId);
    return run ? { session, run } : notFound(reply, session);
  };

  const teamRun = async (session: WebSession, runId: string): Promise<RunRecord | undefined> => {
    try {
      return await runService.get(session, runId);
    } catch (err) {
      if (err instanceof RunError && err.code === "resource_not_found") return undefined;
      throw err;
    }
  };

  /** A POST's session, CSRF token, role and run, checked in that order; or the refusal already sent. */
  const openForAction = async (
    req: FastifyRequest<{ Params: { runId: string } }>,
    reply: FastifyReply,
  ): Promise<{ session: WebSession; run: RunRecord } | FastifyReply> => {
    const session = await sessionOf(req, signIn);
    if (!session) {
      return sendPage(
        reply,
        403,
        "Sign in first",
        `<h1>Sign in first</h1><p>Only a signed-in member of the run's team can act on it; Dispatch did nothing. <a href="/">Sign in</a> and try again.</p>`,
      );
    }
    if (!hasCsrf(req, session)) return sendForbidden(reply, session);
    if (!canAct(session)) {
      return sendPage(
        reply,
        403,
        "Not allowed",
        `<h1>Not allowed</h1><p>Your role (${escapeHtml(session.role)}) can read runs but not follow up on or cancel them; Dispatch did nothing.</p>`,
        session,
      );
    }
    const run = await teamRun(session, req.params.runId);
    return run ? { session, run } : notFound(reply, session);
  };

  app.get<{ Params: { runId: string } }>("/runs/:runId", async (req, reply) => {
    const opened = await open(req, reply);
    if (!("run" in opened)) return opened;
    const { session, run } = opened;
    const q = req.query as { after?: string; done?: string };
    if (q.after !== undefined && !/^\d{1,15}$/.test(q.after)) {
      return sendPage(
        reply,
        400,
        "Bad page",
        `<h1>Bad page</h1><p>after must be the sequence number of a transcript event. <a href="/runs/${encodeURIComponent(run.id)}">The run from its start</a></p>`,
        session,
      );
    }
    const [transcript, delivery, images, binding, gate] = await Promise.all([
      readTranscriptPage(runService, run.id, Number(q.after ?? 0), RUN_PAGE_BUDGET),
      readDelivery(run, opts.store, RUN_PAGE_BUDGET, req.log),
      readAttachments(run, opts.attachments, req.log),
      opts.store.getThreadBinding(run.id),
      readGate(run, opts.store, req.log),
    ]);
    const nonce = randomBytes(16).toString("base64");
    const notice = q.done !== undefined ? NOTICES[q.done] : undefined;
    const now = signIn.now().getTime();
    const body = renderRunPage({
      run,
      session,
      now,
      stall: stallNote(run, now, opts.stallAfterMs),
      facts: runFacts(run, binding, now, opts.stallAfterMs),
      transcript,
      delivery,
      attachments: renderAttachments(images),
      equivalents: runEquivalents(opts.publicUrl() || `${req.protocol}://${req.host}`, run.id),
      ...(notice ? { notice } : {}),
      nonce,
      script: SCRIPT,
      retryKey: randomBytes(16).toString("hex"),
      gate: renderGate(run, gate, session, canAct(session)),
    });
    return sendPage(reply, 200, run.title, body, session, {
      scriptNonce: nonce,
      selfImages: images.length > 0,
      style: `${runViewStyle(delivery)}\n${RUN_HEADER_STYLE}\n${RUN_PAGE_STYLE}\n${RUN_GATE_STYLE}`,
    });
  });

  // What the page's script adds as the run goes on: the server's rendering of its new events.
  app.get<{ Params: { runId: string } }>("/runs/:runId/items", async (req, reply) => {
    const session = await sessionOf(req, signIn);
    const run = session ? await teamRun(session, req.params.runId) : undefined;
    if (!session || !run)
      return reply.code(404).header("cache-control", "no-store").type("text/plain").send("no such run");
    const reread = async () => (await teamRun(session, run.id)) ?? run;
    const delivery = async (fresh: RunRecord) =>
      renderDelivery(await readDelivery(fresh, opts.store, RUN_PAGE_BUDGET, req.log));
    // The run starting or stopping to wait for an answer shows or hides its forms (run-gate.ts).
    const gate = async (fresh: RunRecord) =>
      renderGate(fresh, await readGate(fresh, opts.store, req.log), session, canAct(session));
    return sendLiveItems(
      req,
      reply,
      runService,
      run,
      reread,
      RUN_PAGE_BUDGET,
      signIn.now().getTime(),
      delivery,
      gate,
    );
  });

  // The live transcript of the page above: the same team check, then the API's event stream.
  app.get<{ Params: { runId: string } }>("/runs/:runId/events", async (req, reply) => {
    const session = await sessionOf(req, signIn);
    const run = session ? await teamRun(session, req.params.runId) : undefined;
    if (!run)
      return reply.code(404).header("cache-control", "no-store").type("text/plain").send("no such run");
    const q = req.query as { after?: string };
    const after = resumeAfter(req) ?? (q.after && /^\d{1,15}$/.test(q.after) ? Number(q.after) : 0);
    const cookie = readCookie(req.headers.cookie, SESSION_COOKIE);
    return streamRunEvents(req, reply, runService, run.id, after, {
      everyMs: opts.streamAccessCheckMs,
      // The session still signed in, and the run still in its audience.
      stillSees: async () => {
        const now = await signIn.lookup(cookie);
        return now !== undefined && (await teamRun(now, run.id)) !== undefined;
      },
    });
  });

  // A follow-up may be as long as the API's (LIMITS.promptChars), URL-encoded: this route reads more
  // than the sign-in forms.
  app.post<{ Params: { runId: string } }>(
    "/runs/:runId/followup",
    { bodyLimit: LIMITS.bodyBytes },
    async (req, reply) => {
      const opened = await openForAction(req, reply);
      if (!("run" in opened)) return opened;
      const { session, run } = opened;
      const message = formOf(req).message ?? "";
      const parsed = FollowupRequestSchema.safeParse({ message });
      const again = followupForm(run, session, message);
      if (!parsed.success) {
        return refused(reply, run, session, 400, "Follow-up not sent", describeIssues(parsed.error), again);
      }
      try {
        await runService.followup({ caller: session }, run.id, { message: parsed.data.message });
      } catch (err) {
        return refusal(err, reply, run, session, "Follow-up not sent", again);
      }
      return backToRun(reply, run, "followup");
    },
  );

  // A plan that waits for approval (docs/api.md): Approve with an optional note, Request changes with
  // the changes. Each is the API's answer (a follow-up), so the steering policy decides as for any.
  const answer = async (
    req: FastifyRequest<{ Params: { runId: string } }>,
    reply: FastifyReply,
    action: PlanAnswer["action"],
  ): Promise<FastifyReply> => {
    const opened = await openForAction(req, reply);
    if (!("run" in opened)) return opened;
    const { session, run } = opened;
    const field = formOf(req)[action === "approve" ? "note" : "message"];
    const text = typeof field === "string" ? field : "";
    const heading = action === "approve" ? "Plan not approved" : "Changes not sent";
    const again = action === "revise" ? reviseForm(run, session, text) : "";
    const parsed = ApproveRunRequestSchema.safeParse({
      action,
      ...(action === "revise" || text.trim() !== "" ? { message: text } : {}),
    });
    if (!parsed.success) {
      return refused(reply, run, session, 400, heading, describeIssues(parsed.error), again);
    }
    try {
      // Who may answer before whether there is a plan to answer: the steering policy's refusal first.
      await runService.getToSteer(session, run.id, "followup");
      await answerPlan(runService, { caller: session }, run.id, parsed.data as PlanAnswer);
    } catch (err) {
      return refusal(err, reply, run, session, heading, again);
    }
    return backToRun(reply, run, action === "approve" ? "approved" : "revised");
  };
  for (const action of ["approve", "revise"] as const) {
    app.post<{ Params: { runId: string } }>(
      `/runs/:runId/${action}`,
      { bodyLimit: LIMITS.bodyBytes },
      (req, reply) => answer(req, reply, action),
    );
  }

  // A run that waits for budget (docs/api.md "Budgets"): Extend by an amount, or Stop here. The person
  // answers as themself: their own monthly budgets apply unless they are an admin.
  const answerBudget = async (
    req: FastifyRequest<{ Params: { runId: string } }>,
    reply: FastifyReply,
    action: BudgetRequest["action"],
  ): Promise<FastifyReply> => {
    const opened = await openForAction(req, reply);
    if (!("run" in opened)) return opened;
    const { session, run } = opened;
    const field = formOf(req).amount_usd;
    const amount = typeof field === "string" ? field.trim() : "";
    const heading = action === "extend" ? "Budget not extended" : "Not stopped";
    const again = action === "extend" ? extendForm(run, session, amount) : "";
    const parsed = BudgetRequestSchema.safeParse(
      action === "extend" ? { action, amount_usd: amount === "" ? undefined : Number(amount) } : { action },
    );
    if (!parsed.success) {
      return refused(reply, run, session, 400, heading, describeIssues(parsed.error), again);
    }
    try {
      await opts.budgets.answer({ caller: session }, run.id, parsed.data as BudgetRequest);
    } catch (err) {
      return refusal(err, reply, run, session, heading, again);
    }
    return backToRun(reply, run, action === "extend" ? "extended" : "stopped");
  };
  for (const action of ["extend", "stop"] as const) {
    app.post<{ Params: { runId: string } }>(
      `/runs/:runId/${action}`,
      { bodyLimit: LIMITS.bodyBytes },
      (req, reply) => answerBudget(req, reply, action),
    );
  }

  app.get<{ Params: { runId: string } }>("/runs/:runId/cancel", async (req, reply) => {
    const opened = await open(req, reply);
    if (!("run" in opened)) return opened;
    const { session, run } = opened;
    if (!canAct(session)) {
      return refused(
        reply,
        run,
        session,
        403,
        "Not allowed",
        `Your role (${session.role}) can read runs but not cancel them.`,
      );
    }
    return sendPage(reply, 200, "Cancel this run?", renderCancelConfirm(run, session), session);
  });

  app.post<{ Params: { runId: string } }>("/runs/:runId/cancel", async (req, reply) => {
    const opened = await openForAction(req, reply);
    if (!("run" in opened)) return opened;
    const { session, run } = opened;
    try {
      await runService.cancel({ caller: session }, run.id);
    } catch (err) {
      return refusal(err, reply, run, session, "Run not cancelled");
    }
    return backToRun(reply, run, "cancel");
  });

  // Retry (a stalled or failed run): a new run with the same prompt and settings, in the same thread as
  // the old one (so its card or comment appears there), then the old one cancelled if it still runs.
  app.post<{ Params: { runId: string } }>("/runs/:runId/retry", async (req, reply) => {
    const opened = await openForAction(req, reply);
    if (!("run" in opened)) return opened;
    const { session, run } = opened;
    const key = formOf(req).retry_key ?? "";
    if (!RETRY_KEY.test(key)) {
      return refused(
        reply,
        run,
        session,
        400,
        "Not started again",
        "The form was incomplete: reload the run page and retry from there.",
      );
    }
    let created: { run_id: string };
    try {
      // Retrying starts the request again in the run's thread, and stops the old run if it still runs:
      // the steering policy must allow both, checked before anything is started.
      await runService.getToSteer(session, run.id, "retry");
      if (!isTerminal(run.state)) await runService.getToSteer(session, run.id, "cancel");
      created = await runService.create(
        {
          caller: session,
          creator: creatorOf(session),
          source: run.source,
          ...(run.triggerUrl ? { triggerUrl: run.triggerUrl } : {}),
          idempotencyKey: `web-retry-${key}`,
          rawBody: { retry: run.id },
          retryOf: run.id,
        },
        retryInput({
          prompt: run.prompt,
          title: run.title,
          config: run.agentConfig as Record<string, unknown>,
          fromSkill: run.agentSkill !== null,
        }),
      );
    } catch (err) {
      return refusal(err, reply, run, session, "Not started again");
    }
    const [binding, card] = await Promise.all([
      opts.store.getThreadBinding(run.id),
      opts.store.getCardState(run.id),
    ]);
    const thread = binding?.thread ?? card?.cardRef;
    if (binding && thread) {
      await opts.store.bindThread({
        ...binding,
        runId: created.run_id,
        thread,
        triggerRef: null,
        createdAt: new Date().toISOString(),
      });
    }
    if (!isTerminal(run.state)) {
      try {
        await runService.cancel({ caller: session }, run.id);
      } catch (err) {
        // Finished in the meantime: nothing is left to stop.
        if (!(err instanceof RunError && err.code === "invalid_request")) throw err;
      }
    }
    return reply
      .header("cache-control", "no-store")
      .redirect(`/runs/${encodeURIComponent(created.run_id)}?done=retried`, 303);
  });
}

function backToRun(reply: FastifyReply, run: RunRecord, done: keyof typeof NOTICES): FastifyReply {
  return reply
    .header("cache-control", "no-store")
    .redirect(`/runs/${encodeURIComponent(run.id)}?done=${done}`, 303);
}

/** A refusal of the run service as a page with its status (4xx); anything else is not this page's to word. */
function refusal(
  err: unknown,
  reply: FastifyReply,
  run: RunRecord,
  session: WebSession,
  heading: string,
  again?: string,
): FastifyReply {
  if (!(err instanceof RunError)) throw err;
  const { status } = httpOf(err);
  if (status >= 500) throw err;
  return refused(reply, run, session, status, heading, err.detail ?? err.message, again);
}

function refused(
  reply: FastifyReply,
  run: RunRecord,
  session: WebSession,
  status: number,
  heading: string,
  message: string,
  again?: string,
): FastifyReply {
  return sendPage(reply, status, heading, renderRefusal(run, heading, message, again), session, {
    style: RUN_PAGE_STYLE,
  });
}

/** The same page for another team's run and for an id that names nothing. */
function notFound(reply: FastifyReply, session: WebSession): FastifyReply {
  return sendPage(
    reply,
    404,
    "Run not found",
    `<h1>Run not found</h1><p>There is no such run here, or it is not one you can see.</p><p><a href="/">Back to the runs</a></p>`,
    session,
  );
}
