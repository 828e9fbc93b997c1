import { z } from "zod";
import { invalidConfiguration, parseVariables, problemRecorder, variablesFor } from "./config-env.ts";

/**
 * The Jira surface's variables (README, "Jira"): the site, a service account's credentials (an API token
 * on Cloud, a personal access token on Data Center), the webhook secret and the service account's identity.
 * Which flavour a site is follows from its credentials.
 */

const JiraEnvSchema = z.object({
  JIRA_BASE_URL: z
    .url({ error: "must be the site's URL, such as https://acme.atlassian.net or https://jira.example.com" })
    .transform((u) => u.replace(/\/+$/, "")),
  JIRA_EMAIL: z.email("must be the service account's e-mail address (Jira Cloud)").optional(),
  JIRA_API_TOKEN: z.string().min(8, "must be the service account's API token (Jira Cloud)").optional(),
  JIRA_PAT: z.string().min(8, "must be the service account's personal access token (Data Center)").optional(),
  JIRA_WEBHOOK_SECRET: z
    .string()
    .min(16, "must be at least 16 characters (e.g. openssl rand -hex 32)")
    .regex(/^[\x21-\x7e]+$/, "must be printable characters without spaces")
    .optional(),
  JIRA_BOT_ACCOUNT_ID: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,128}$/, "must be the service account's Atlassian account id")
    .optional(),
  JIRA_BOT_USERNAME: z
    .string()
    .regex(/^[^\s[\]|~]{1,255}$/, "must be the service account's Jira username")
    .optional(),
});

const jiraConfigSchema = (receivesWebhooks: boolean) =>
  JiraEnvSchema.transform((e, ctx) => {
    const problems = problemRecorder(ctx);
    const cloud = Boolean(e.JIRA_EMAIL || e.JIRA_API_TOKEN);
    if (cloud && e.JIRA_PAT) {
      problems.add(
        "JIRA_PAT",
        "set either JIRA_EMAIL and JIRA_API_TOKEN (Jira Cloud) or JIRA_PAT (Data Center), not both",
      );
    } else if (!cloud && !e.JIRA_PAT) {
      problems.add(
        "JIRA_API_TOKEN",
        "required with JIRA_EMAIL on Jira Cloud (or set JIRA_PAT on Data Center) to enable Jira",
      );
    } else if (cloud && !e.JIRA_EMAIL) {
      problems.add("JIRA_EMAIL", "required with JIRA_API_TOKEN: the service account's e-mail address");
    } else if (cloud && !e.JIRA_API_TOKEN) {
      problems.add("JIRA_API_TOKEN", "required with JIRA_EMAIL: the service account's API token");
    }
    if (cloud && !e.JIRA_BOT_ACCOUNT_ID) {
      problems.add(
        "JIRA_BOT_ACCOUNT_ID",
        "required on Jira Cloud: the service account's account id, which people mention",
      );
    }
    if (e.JIRA_PAT && !e.JIRA_BOT_USERNAME) {
      problems.add(
        "JIRA_BOT_USERNAME",
        "required on Data Center: the service account's username, which people mention",
      );
    }
    if (receivesWebhooks && !e.JIRA_WEBHOOK_SECRET) {
      problems.add("JIRA_WEBHOOK_SECRET", "required to receive Jira webhooks");
    }
    if (problems.found) return z.NEVER;
    const site =
      e.JIRA_PAT !== undefined
        ? {
            flavour: "datacenter" as const,
            auth: { kind: "pat" as const, token: e.JIRA_PAT },
            botId: e.JIRA_BOT_USERNAME!,
          }
        : {
            flavour: "cloud" as const,
            auth: { kind: "basic" as const, email: e.JIRA_EMAIL!, apiToken: e.JIRA_API_TOKEN! },
            botId: e.JIRA_BOT_ACCOUNT_ID!,
          };
    return {
      /** The site's URL, without a trailing slash. */
      baseUrl: e.JIRA_BASE_URL,
      /** `cloud` (REST v3, Atlassian Document Format) or `datacenter` (REST v2, wiki markup). */
      flavour: site.flavour,
      auth: site.auth,
      /** Who people mention and assign: an account id on Cloud, a username on Data Center. */
      botId: site.botId,
      /**
       * Verifies POST /jira/webhooks: the HMAC key of Cloud's X-Hub-Signature, the URL's `secret` on Data
       * Center; unset only in a process without the api role.
       */
      webhookSecret: e.JIRA_WEBHOOK_SECRET,
    };
  });

export type JiraConfig = z.output<ReturnType<typeof jiraConfigSchema>>;

/**
 * JIRA_* variables: undefined when none is set, else a complete, checked configuration. A JIRA_* variable
 * without JIRA_BASE_URL is an error naming it: a half-configured surface should not go unnoticed.
 */
export function loadJiraConfig(
  env: NodeJS.ProcessEnv,
  opts: { receivesWebhooks: boolean } = { receivesWebhooks: true },
): JiraConfig | undefined {
  const given = variablesFor(JiraEnvSchema, env);
  if (!given.JIRA_BASE_URL) {
    const stray = Object.keys(given)[0];
    if (stray) {
      throw invalidConfiguration([
        { path: ["JIRA_BASE_URL"], message: `required to enable Jira; ${stray} is set` },
      ]);
    }
    return undefined;
  }
  return parseVariables(jiraConfigSchema(opts.receivesWebhooks), given);
}
