import type { FastifyInstance } from "fastify";
import type { RunAccess } from "../access/run-access.ts";
import { ArtifactLinks } from "../api/artifact-links.ts";
import { agentRoutes } from "../api/routes/agents.ts";
import { artifactRoutes } from "../api/routes/artifacts.ts";
import { attachmentContentPath, attachmentRoutes } from "../api/routes/attachments.ts";
import { auditRoutes } from "../api/routes/audit.ts";
import { conversationRoutes } from "../api/routes/conversations.ts";
import { environmentRoutes } from "../api/routes/environments.ts";
import { identityRoutes } from "../api/routes/identities.ts";
import { modelRoutes } from "../api/routes/models.ts";
import { networkingRoutes } from "../api/routes/networking.ts";
import { redirectRoutes } from "../api/routes/redirects.ts";
import { runApprovalRoutes } from "../api/routes/run-approval.ts";
import { runBudgetRoutes } from "../api/routes/run-budget.ts";
import { runInsightRoutes, transcriptContentPath } from "../api/routes/run-insights.ts";
import { runRoutes } from "../api/routes/runs.ts";
import { scheduleRoutes } from "../api/routes/schedules.ts";
import { usageRoutes } from "../api/routes/usage.ts";
import { webhookRoutes } from "../api/routes/webhooks.ts";
import { AgentCatalog } from "../catalog/agents.ts";
import { EnvironmentCatalog } from "../catalog/environments.ts";
import { listModels } from "../catalog/models.ts";
import type { Config } from "../config.ts";
import { IdentityService } from "../identities/identity-service.ts";
import type { RunBudgets } from "../runs/budget-answer.ts";
import type { RunService } from "../runs/run-service.ts";
import type { ScheduleService } from "../schedules/schedule-service.ts";
import type { Store } from "../store/store.ts";
import type { GitHubSignIn } from "../web/auth/github-sign-in.ts";
import type { WebSignIn } from "../web/auth/web-sign-in.ts";
import { sessionPage } from "../web/session-page.ts";
import { webApp } from "../web/web-app.ts";
import { WebhookService } from "../webhooks/webhook-service.ts";
import { listLocalSkills } from "../workspace/skill-catalog.ts";

/**
 * The api role's routes, all in one place: the run API (runs, redirects, catalog, identities, schedules,
 * webhooks, the audit log, usage, artifacts and attachments with their signed links), the public session page and the team's
 * web app.
 * The surfaces mount their own routes (src/surfaces); system routes (/healthz, /readyz, /metrics) are
 * every role's.
 */
export function registerApi(
  server: FastifyInstance,
  deps: {
    config: Config;
    store: Store;
    runService: RunService;
    budgets: RunBudgets;
    access: RunAccess;
    schedules: ScheduleService;
    signingKey: Buffer;
    webSignIn: WebSignIn;
    /** Sign-in by a comment on a surface, when one lends it (GitHub's `login <code>`). */
    commentSignIn: GitHubSignIn | undefined;
    publicUrl: () => string;
  },
): void {
  const { config, store, runService, publicUrl } = deps;
  server.register(runRoutes, { runService, publicUrl, streamAccessCheckMs: config.http.streamAccessCheckMs });
  server.register(redirectRoutes, { runService });
  const models = listModels(config.models);
  server.register(modelRoutes, { models: () => models });
  server.register(networkingRoutes, { egressCidrs: config.egressCidrs });
  const environments = new EnvironmentCatalog(config.settings.environments, store, new Date());
  server.register(environmentRoutes, { environments });
  const agents = new AgentCatalog({
    skills: () => listLocalSkills(config.settings.skills, process.cwd()),
    environments: () => environments.names(),
    store,
  });
  server.register(agentRoutes, { agents });
  server.register(identityRoutes, { identities: new IdentityService(store) });
  server.register(scheduleRoutes, { schedules: deps.schedules, access: deps.access });
  server.register(auditRoutes, { store });
  server.register(usageRoutes, { store, access: deps.access });
  server.register(webhookRoutes, {
    webhooks: new WebhookService(store, { allowPrivate: config.webhooks.allowPrivate }),
  });
  // One signing key for every signed content link (artifacts and attachments).
  server.register(artifactRoutes, {
    store,
    runService,
    links: new ArtifactLinks(deps.signingKey),
    publicUrl,
  });
  const attachmentLinks = new ArtifactLinks(deps.signingKey, {
    kind: "attachment",
    path: attachmentContentPath,
  });
  server.register(attachmentRoutes, { store, runService, links: attachmentLinks, publicUrl });
  const transcriptLinks = new ArtifactLinks(deps.signingKey, {
    kind: "transcript",
    path: transcriptContentPath,
  });
  server.register(runInsightRoutes, { runService, links: transcriptLinks, publicUrl });
  server.register(runApprovalRoutes, { runService });
  server.register(runBudgetRoutes, { budgets: deps.budgets });
  server.register(conversationRoutes, { runService, links: transcriptLinks, publicUrl });
  server.register(sessionPage, {
    runService,
    artifacts: store,
    attachments: { store, links: attachmentLinks },
    stallAfterMs: config.stallAfterMs,
  });
  server.register(webApp, {
    ...(deps.commentSignIn ? { githubSignIn: deps.commentSignIn } : {}),
    signIn: deps.webSignIn,
    runService,
    budgets: deps.budgets,
    store,
    attachments: { store, links: attachmentLinks },
    publicUrl,
    stallAfterMs: config.stallAfterMs,
    streamAccessCheckMs: config.http.streamAccessCheckMs,
    slashCommand: config.slack?.command ?? "/agent",
  });
}
