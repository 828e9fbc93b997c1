import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Audience } from "../access/audience.ts";
import type { RunAccess } from "../access/run-access.ts";
import type { Config } from "../config.ts";
import type { PullRequestHost } from "../delivery/pull-request-host.ts";
import type { Principal, Team } from "../model/identity.ts";
import type { NotifierPlatform } from "../notifier/platform.ts";
import type { RunsApi } from "../runs/runs-api.ts";
import type { ScheduleService } from "../schedules/schedule-service.ts";
import type { Store } from "../store/store.ts";
import type { GitHubSignIn } from "../web/auth/github-sign-in.ts";
import type { WebSignIn } from "../web/auth/web-sign-in.ts";

/**
 * A surface: a place people work that Dispatch listens to and reports to (docs/surfaces.md). Each one is a
 * folder that implements this contract and is listed once in registry.ts; app.ts wires every surface the
 * same way, and nothing else in the code base needs to know its name.
 *
 * - Inbound (the api role): routes that verify and store deliveries in the durable inbox before they are
 *   acknowledged, a handler that turns them into RunsApi calls and binds their threads.
 * - The audience of its threads, for the access rule (RunAccess).
 * - Outbound (the notifier role): how it renders and sends cards, replies and reactions (NotifierPlatform).
 */
export interface Surface {
  /** The platform name its thread bindings and outbox targets carry ("slack", "github", …). */
  readonly platform: string;
  /** Who is in the audience of its threads; present where it serves inbound deliveries. */
  readonly audience?: Audience;
  /** Its side of the notifier; present where this process reports to it. */
  readonly notifier?: NotifierPlatform;
  /**
   * What it reports besides cards and final replies, where this process reports to it: Linear's step
   * activities, read from runs' transcripts. Started after the notifier and stopped before it.
   */
  readonly reporter?: SurfaceReporter;
  /** Inbound, where this process serves the API: mounted before the server listens, started after. */
  readonly inbound?: SurfaceInbound;
  /** What it lends delivery: opening and updating pull requests on its host (GitHub). */
  readonly pullRequests?: PullRequestHost;
  /** A way to sign in to the web app through it (GitHub's `login <code>` comment). */
  readonly commentSignIn?: GitHubSignIn;
}

export interface SurfaceInbound {
  /** Mounts its routes (call before the server listens). */
  register(server: FastifyInstance): void;
  /** Starts handling stored deliveries (also those acknowledged before a crash). */
  start(): Promise<void> | void;
  /** Lets work that started after an acknowledgement finish; the rest stays in the inbox. */
  stop(): Promise<void>;
  /** Resolves once every delivery acknowledged so far has been handled (tests, benchmarks). */
  idle(): Promise<void>;
}

export interface SurfaceReporter {
  start(): void;
  /** Lets what it is sending to the outbox finish. */
  stop(): Promise<void>;
}

/** What a surface is built with: the process's configuration, store and run access, and its roles. */
export interface SurfaceContext {
  config: Config;
  log: Logger;
  store: Store;
  access: RunAccess;
  /** Whether this process receives deliveries (the api role). */
  inbound: boolean;
  /** Whether this process reports to surfaces (the notifier role). */
  outbound: boolean;
  /** The RunsApi a surface acts through as its own service account: this process's or a remote Dispatch's. */
  runsApi(who: { id: string; displayName: string }): Promise<RunsApi>;
  /** The service account `who` in the team its runs belong to (in process only; undefined in remote mode). */
  serviceAccount?(who: { id: string; displayName: string }): Promise<{ principal: Principal; team: Team }>;
  /** Schedules made from a surface's threads, in process (absent in remote mode). */
  schedules?: ScheduleService;
  /** Web sign-in, where this process's web app shows the surface's runs (absent in remote mode). */
  webSignIn?: WebSignIn;
  /** The notifier's card edit windows, by platform, where a test or deployment overrides a surface's own. */
  editIntervalMs: Readonly<Record<string, number>>;
  /** Options a test passes to one surface by its platform name (e.g. GitHub's request pacing). */
  options: Readonly<Record<string, unknown>>;
  publicUrl(): string;
}

/** One line of the registry: when a surface is configured, and how its folder is loaded (lazily). */
export interface SurfaceDefinition {
  readonly platform: string;
  configured(config: Config): boolean;
  load(): Promise<{ createSurface(ctx: SurfaceContext): Promise<Surface> }>;
}
