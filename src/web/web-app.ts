import type { FastifyInstance } from "fastify";
import type { RunTranscript } from "../api/event-stream.ts";
import type { RunBudgets } from "../runs/budget-answer.ts";
import type { RunService } from "../runs/run-service.ts";
import type { Store } from "../store/store.ts";
import { auditPage } from "./audit-page.ts";
import type { GitHubSignIn } from "./auth/github-sign-in.ts";
import { githubSignInRoutes } from "./auth/github-sign-in-routes.ts";
import { SignInLimits } from "./auth/sign-in-limits.ts";
import { signInRoutes } from "./auth/sign-in-routes.ts";
import type { WebSignIn } from "./auth/web-sign-in.ts";
import { type DashboardStore, dashboard } from "./dashboard.ts";
import { runPage } from "./run-page.ts";
import type { AttachmentSource } from "./run-view.ts";

/** A sign-in form is a few hundred bytes; nothing larger is read. */
const FORM_BODY_LIMIT = 8 * 1024;

export interface WebAppOptions {
  signIn: WebSignIn;
  runService: Pick<
    RunService,
    | "list"
    | "get"
    | "getToSteer"
    | "audienceOf"
    | "followup"
    | "cancel"
    | "create"
    | "history"
    | "replayedAnswer"
  > &
    RunTranscript;
  store: Pick<
    Store,
    "readArtifactHead" | "getThreadBinding" | "getCardState" | "bindThread" | "listAuditEvents"
  > &
    DashboardStore;
  /** Answers to runs that wait for budget (the run page's Extend and Stop here). */
  budgets: Pick<RunBudgets, "answer">;
  /** The run page's image attachments and the signer of their links; without it the page shows none. */
  attachments?: AttachmentSource;
  /** The API's public base, for the run page's CLI and curl lines. */
  publicUrl: () => string;
  /** The Slack slash command (`/agent`), as the pages spell it. */
  slashCommand: string;
  /** DISPATCH_STALL_AFTER_S in ms: the pages say when a run in progress has been quiet longer. */
  stallAfterMs: number;
  /** How often open run streams and dashboard feeds check that their viewer still sees what they show. */
  streamAccessCheckMs: number;
  /** Sign-in with a comment on GitHub (GET /login/github), when the GitHub integration runs here. */
  githubSignIn?: GitHubSignIn;
}

/**
 * The team's web app: sign-in (Slack login links, the admin key form, sign-out), the runs
 * dashboard, the run pages and (for admins) the audit log. Its forms post application/x-www-form-urlencoded, which only this plugin's scope parses:
 * the API stays JSON-only.
 */
export async function webApp(app: FastifyInstance, opts: WebAppOptions): Promise<void> {
  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: FORM_BODY_LIMIT },
    (_req, body, done) => {
      const form: Record<string, string> = Object.create(null);
      // The first value of a field counts; a repeated field cannot smuggle a second one in.
      for (const [key, value] of new URLSearchParams(body as string)) if (!(key in form)) form[key] = value;
      done(null, form);
    },
  );
  const github = opts.githubSignIn ? { githubHandle: opts.githubSignIn.handle } : {};
  const limits = new SignInLimits(opts.signIn.now);
  await app.register(signInRoutes, {
    signIn: opts.signIn,
    limits,
    slashCommand: opts.slashCommand,
    ...github,
  });
  if (opts.githubSignIn) {
    await app.register(githubSignInRoutes, { github: opts.githubSignIn, signIn: opts.signIn, limits });
  }
  await app.register(dashboard, {
    signIn: opts.signIn,
    runService: opts.runService,
    store: opts.store,
    slashCommand: opts.slashCommand,
    stallAfterMs: opts.stallAfterMs,
    streamAccessCheckMs: opts.streamAccessCheckMs,
    ...github,
  });
  await app.register(runPage, {
    signIn: opts.signIn,
    runService: opts.runService,
    budgets: opts.budgets,
    store: opts.store,
    ...(opts.attachments ? { attachments: opts.attachments } : {}),
    publicUrl: opts.publicUrl,
    stallAfterMs: opts.stallAfterMs,
    streamAccessCheckMs: opts.streamAccessCheckMs,
  });
  await app.register(auditPage, { signIn: opts.signIn, store: opts.store });
}
