import type { FastifyInstance } from "fastify";
import type { RunService } from "../runs/run-service.ts";
import type { Store } from "../store/store.ts";
import { signInRoutes } from "./auth/sign-in-routes.ts";
import type { WebSignIn } from "./auth/web-sign-in.ts";
import { dashboard } from "./dashboard.ts";

/** A sign-in form is a few hundred bytes; nothing larger is read. */
const FORM_BODY_LIMIT = 8 * 1024;

export interface WebAppOptions {
  signIn: WebSignIn;
  runService: Pick<RunService, "list" | "get">;
  store: Pick<Store, "countRunsByState">;
  /** The Slack slash command (`/agent`), as the pages spell it. */
  slashCommand: string;
}

/**
 * The team's web app (issue 15): sign-in (Slack login links, the admin key form, sign-out) and the runs
 * dashboard. Its forms post application/x-www-form-urlencoded, which only this plugin's scope parses:
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
  await app.register(signInRoutes, { signIn: opts.signIn, slashCommand: opts.slashCommand });
  await app.register(dashboard, {
    signIn: opts.signIn,
    runService: opts.runService,
    counts: opts.store,
    slashCommand: opts.slashCommand,
  });
}
