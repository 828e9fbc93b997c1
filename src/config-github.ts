import { createPrivateKey } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { invalidConfiguration, parseVariables, problemRecorder, variablesFor } from "./config-env.ts";

/** The GitHub integration's variables (README, "GitHub"): an App or a token, the webhook secret, the handle. */

const GitHubEnvSchema = z.object({
  GITHUB_APP_ID: z
    .string()
    .regex(/^\d{1,20}$/, "must be the App's numeric id")
    .optional(),
  GITHUB_PRIVATE_KEY: z.string().min(1).optional(),
  GITHUB_WEBHOOK_SECRET: z.string().min(8, "must be at least 8 characters").optional(),
  GITHUB_TOKEN: z.string().min(8, "must be a GitHub token (ghp_…, github_pat_…)").optional(),
  GITHUB_API_URL: z
    .url()
    .default("https://api.github.com")
    .transform((u) => u.replace(/\/+$/, "")),
  GITHUB_BOT_HANDLE: z
    .string()
    .transform((h) => h.replace(/^@/, ""))
    .pipe(z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, "must be a GitHub login such as dispatch"))
    .optional(),
});

/**
 * `receivesWebhooks`: the process serves the api role, which answers POST /github/webhooks. A process
 * without it (a worker pushing branches and opening pull requests) needs no GITHUB_WEBHOOK_SECRET, so a
 * deployment can keep that secret off the machines that run agents.
 */
const githubConfigSchema = (receivesWebhooks: boolean) =>
  GitHubEnvSchema.transform((e, ctx) => {
    const problems = problemRecorder(ctx);
    if (!e.GITHUB_APP_ID && !e.GITHUB_TOKEN) {
      problems.add("GITHUB_APP_ID", "required (or GITHUB_TOKEN) to enable the GitHub integration");
    }
    if (e.GITHUB_APP_ID && e.GITHUB_TOKEN) {
      problems.add("GITHUB_TOKEN", "set either GITHUB_APP_ID (a GitHub App) or GITHUB_TOKEN, not both");
    }
    if (receivesWebhooks && !e.GITHUB_WEBHOOK_SECRET) {
      problems.add("GITHUB_WEBHOOK_SECRET", "required to receive GitHub webhooks");
    }
    if (!e.GITHUB_BOT_HANDLE) {
      problems.add("GITHUB_BOT_HANDLE", "required: the @mention people write, e.g. dispatch");
    }
    let privateKey: string | undefined;
    if (e.GITHUB_APP_ID && !e.GITHUB_PRIVATE_KEY) {
      problems.add("GITHUB_PRIVATE_KEY", "required with GITHUB_APP_ID (the App's PEM, or its path)");
    } else if (e.GITHUB_APP_ID && e.GITHUB_PRIVATE_KEY) {
      privateKey = readPrivateKey(e.GITHUB_PRIVATE_KEY, (message) =>
        problems.add("GITHUB_PRIVATE_KEY", message),
      );
    }
    const auth =
      e.GITHUB_APP_ID && privateKey
        ? { kind: "app" as const, appId: e.GITHUB_APP_ID, privateKey }
        : e.GITHUB_TOKEN
          ? { kind: "token" as const, token: e.GITHUB_TOKEN }
          : undefined;
    if (problems.found || !auth || !e.GITHUB_BOT_HANDLE) return z.NEVER;
    return {
      /** A GitHub App (installation tokens) or a token. */
      auth,
      /** The App id, to recognise comments posted through this App. */
      appId: e.GITHUB_APP_ID,
      /** Verifies X-Hub-Signature-256 of POST /github/webhooks; unset only in a process without the api role. */
      webhookSecret: e.GITHUB_WEBHOOK_SECRET,
      /** GITHUB_API_URL without a trailing slash. */
      apiUrl: e.GITHUB_API_URL,
      /** The @mention, without the @ (an App's slug: comments then come from "<slug>[bot]"). */
      botHandle: e.GITHUB_BOT_HANDLE,
    };
  });

export type GitHubConfig = z.output<ReturnType<typeof githubConfigSchema>>;
/** The GitHub configuration of a process that receives webhooks (the api role). */
export type GitHubWebhookConfig = GitHubConfig & { webhookSecret: string };

/**
 * GITHUB_* variables: undefined when neither GITHUB_APP_ID nor GITHUB_TOKEN is set (and nothing else of
 * GitHub's is), else a complete, checked configuration. GITHUB_PRIVATE_KEY is the PEM itself (newlines
 * may be written as \n) or the path of a PEM file. GITHUB_WEBHOOK_SECRET is required unless
 * `receivesWebhooks` is false (githubConfigSchema).
 */
export function loadGitHubConfig(
  env: NodeJS.ProcessEnv,
  opts: { receivesWebhooks: boolean } = { receivesWebhooks: true },
): GitHubConfig | undefined {
  const given = variablesFor(GitHubEnvSchema, env);
  const { GITHUB_API_URL: _url, ...set } = given;
  if (!set.GITHUB_APP_ID && !set.GITHUB_TOKEN) {
    const stray = Object.keys(set)[0];
    if (stray) {
      throw invalidConfiguration([
        {
          path: ["GITHUB_APP_ID"],
          message: `required (or GITHUB_TOKEN) to enable the GitHub integration; ${stray} is set`,
        },
      ]);
    }
    return undefined;
  }
  return parseVariables(githubConfigSchema(opts.receivesWebhooks), given);
}

/** The PEM in `value` (or in the file it names), once it reads as a private key; else `problem` says why. */
function readPrivateKey(value: string, problem: (message: string) => void): string | undefined {
  let pem = value.includes("-----BEGIN") ? value.replace(/\\n/g, "\n") : undefined;
  if (pem === undefined) {
    const path = resolve(value);
    if (!existsSync(path)) {
      problem(`neither a PEM key nor an existing file (${path})`);
      return undefined;
    }
    pem = readFileSync(path, "utf8");
  }
  try {
    createPrivateKey(pem);
  } catch (err) {
    problem(`not a readable private key (${err instanceof Error ? err.message : String(err)})`);
    return undefined;
  }
  return pem;
}
