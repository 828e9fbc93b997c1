import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { EXTERNAL_DEFAULT_MODELS } from "../../model/harness-wire.ts";
import type { AgentConfig, RequestUsage, RunEventType, RunRecord } from "../../model/run.ts";
import type { Sandbox } from "../../sandbox/sandbox.ts";
import { usageFromTranscript } from "../builtin/history.ts";
import type { Harness, HarnessContext, HarnessOutcome } from "../harness.ts";
import { planTurnSandbox, withPlanInstruction } from "../plan-mode.ts";
import { type AgentArea, prepareAgentArea, savedSession, saveSession } from "./agent-area.ts";
import { type AgentProgram, nodeExecutable } from "./agent-program.ts";
import { ModelGateway, type ProviderRoute } from "./model-gateway.ts";
import { RELAY_SCRIPT } from "./relay-script.ts";
import type { ObservedCall, UsageDialect } from "./response-usage.ts";

export interface ExternalHarnessOptions {
  /** The provider's key and base URL from Dispatch's configuration (models-config.ts). */
  provider: { apiKey?: string | undefined; baseUrl?: string | undefined };
  /**
   * Models (`provider/model`) an agent may call besides its run's own (`models.gateway_allowed` of
   * dispatch.config.yaml); the model gateway refuses any other. None when absent.
   */
  allowedModels?: readonly string[];
  /** Model calls per execution before the run fails (default 100, like the builtin harness). */
  maxSteps?: number;
  /** Wall-clock limit when the run sets no max_run_minutes (default 30). */
  defaultMaxRunMinutes?: number;
  /** Length of a "minute" for max_run_minutes: tests shrink it. */
  minuteMs?: number;
  /** How often live follow-ups are looked for while the agent works (default 250 ms). */
  followupPollMs?: number;
}

const DEFAULT_MAX_STEPS = 100;
const DEFAULT_MAX_RUN_MINUTES = 30;
/** The key the agent holds: the gateway replaces it with the real one. Not a secret. */
export const PLACEHOLDER_KEY = "dispatch-model-gateway";
/** Kept of the agent's stderr, for the message when it fails. */
const STDERR_TAIL = 4000;

/** What an agent session may do while its stream is read. */
export interface AgentIO {
  emit(type: RunEventType, data: Record<string, unknown>): Promise<void>;
  /** Writes one line to the agent's stdin (live input); ignored once the input is closed. */
  write(line: string): void;
  /**
   * The agent finished a turn: hands it the follow-ups that arrived meanwhile (true: it goes on), or
   * closes its input so that it exits (false). Serialised with the live follow-up poll, so none is lost.
   */
  continueOrClose(): Promise<boolean>;
  /** Closes the agent's input (it exits once done): after a failed turn. */
  closeInput(): Promise<void>;
  /** Adds one model turn's tokens to the run's usage (and a `usage` event). */
  recordUsage(used: { input_tokens: number; output_tokens: number }): Promise<void>;
  /** Remembers the agent's session id in the run's private area: the next turn resumes it. */
  saveSession(id: string): Promise<void>;
  /** The agent reported a failure of its task (not of its process). */
  fail(message: string): void;
  /** The agent reported its turn complete. */
  completed(): void;
  /**
   * The agent asked the person a question: its turn ends waiting for the answer (a follow-up), unless one
   * reaches it before the turn is over.
   */
  asked(question: string): void;
}

/** One harness.run of an agent: how it starts and how its stream maps onto Dispatch's events. */
export interface AgentSession {
  /** Arguments after the program; PORT_PLACEHOLDER stands for the relay's port. */
  args: string[];
  /** Variables for the agent (HOME and its config directories are set by the driver). */
  env: Record<string, string>;
  /** Makes what the agent needs in its HOME before it starts (its config directory and settings). */
  prepare?(): Promise<void>;
  /** Whether stdin stays open for live follow-ups (else it is closed once `begin` has written). */
  liveInput: boolean;
  /** Called once the process runs: writes the input when it goes through stdin. */
  begin(io: AgentIO): void;
  /** One line of the agent's machine-readable stream, parsed. */
  handle(event: Record<string, unknown>, io: AgentIO): Promise<void>;
  /** Hands follow-ups to the running agent (liveInput only). */
  deliver?(messages: string[], io: AgentIO): void;
}

export interface SessionSetup {
  run: RunRecord;
  workspace: string;
  /** What the agent receives for this turn: the prompt, or follow-ups. */
  input: string[];
  /** The agent session to resume (a follow-up turn of the same run), if one was saved. */
  resume: string | undefined;
  /** The provider's name of the run's model (config.model_id, else the agent's default, without provider). */
  model: string;
  /** The agent's HOME, in the run's private area. */
  home: string;
  /** The base URL of the provider as the agent sees it (the relay), PORT_PLACEHOLDER in it. */
  baseUrl: string;
}

/**
 * Runs an external agent CLI (Claude Code, Codex, Gemini CLI) as a harness: non-interactively in the run's
 * sandbox and workspace, with its HOME in the run's private area, its only way out a model gateway that
 * holds the provider key (the agent gets a placeholder), its stream mapped onto transcript events, its
 * token usage into request_usage, follow-ups delivered live or at the next turn by resuming its session,
 * the step limit counted at the gateway and the wall-clock limit and cancel ending its process group.
 */
export abstract class ExternalHarness implements Harness {
  abstract readonly type: string;
  /** How people know the agent ("Claude Code"). */
  protected abstract readonly label: string;
  /** The variable that holds the provider key in Dispatch's configuration. */
  protected abstract readonly keyVariable: string;
  /** The model_id prefix this agent's models carry ("anthropic"). */
  protected abstract readonly modelProvider: string;
  protected readonly opts: ExternalHarnessOptions;

  constructor(opts: ExternalHarnessOptions) {
    this.opts = opts;
  }

  /** The installed program, or why it cannot run. */
  protected abstract program(): AgentProgram | { problem: string };
  /** Where the gateway forwards to, with the real key. */
  protected abstract route(apiKey: string): ProviderRoute;
  /** The base URL the agent is given (the relay on the sandbox's loopback). */
  protected abstract agentBaseUrl(): string;
  protected abstract session(setup: SessionSetup): AgentSession;

  availability(config: AgentConfig): string | undefined {
    if (!this.opts.provider.apiKey) {
      return `config.harness ${this.type} needs a ${this.modelProvider} key: set ${this.keyVariable} in Dispatch's configuration (the agent reaches its model through Dispatch, which keeps the key), or choose another harness`;
    }
    const program = this.program();
    if ("problem" in program) return program.problem;
    const model = config.model_id;
    if (model?.includes("/") && !model.startsWith(`${this.modelProvider}/`)) {
      return `config.model_id: the ${this.type} harness runs ${this.modelProvider} models; give "${this.modelProvider}/<model>" or leave model_id out for ${this.label}'s default`;
    }
    if (config.mcp_servers && Object.keys(config.mcp_servers).length > 0) {
      return `config.mcp_servers is not supported with the ${this.type} harness yet; leave it out, or use the builtin harness ({type: "oz", name: "builtin"})`;
    }
    return undefined;
  }

  /** The provider's names of the models the operator lets this agent call besides the run's own. */
  private alsoAllowed(): string[] {
    const prefix = `${this.modelProvider}/`;
    return (this.opts.allowedModels ?? []).filter((id) => id.startsWith(prefix)).map(modelName);
  }

  async run(ctx: HarnessContext): Promise<HarnessOutcome> {
    const config = ctx.run.agentConfig;
    const usage: RequestUsage = usageFromTranscript((await ctx.transcript?.()) ?? []);
    const refusal = this.availability(config);
    if (refusal) {
      await ctx.emit("error", { message: refusal, error_code: "harness_unavailable" });
      return { status: "failed", message: refusal, errorCode: "harness_unavailable", usage };
    }
    const program = this.program() as AgentProgram;
    const apiKey = this.opts.provider.apiKey!;
    // Runs created before every external run had a model_id get the agent's default, as new ones do.
    const model = modelName(config.model_id ?? EXTERNAL_DEFAULT_MODELS[this.type]!);
    const log = ctx.log.child({ component: `${this.type}-harness` });
    const minutes = config.max_run_minutes ?? this.opts.defaultMaxRunMinutes ?? DEFAULT_MAX_RUN_MINUTES;
    const maxSteps = this.opts.maxSteps ?? DEFAULT_MAX_STEPS;

    const stop = new AbortController();
    let stopReason: "time_limit" | "step_limit" | undefined;
    const halt = (reason: "time_limit" | "step_limit") => {
      stopReason ??= reason;
      stop.abort(reason);
    };
    const timer = setTimeout(() => halt("time_limit"), minutes * (this.opts.minuteMs ?? 60_000));
    const signal = AbortSignal.any([ctx.signal, stop.signal]);

    // Defence in depth: the agent never holds the key, but nothing it prints may carry it either.
    const scrub = (data: Record<string, unknown>): Record<string, unknown> => {
      const text = JSON.stringify(data);
      return text.includes(apiKey) ? JSON.parse(text.split(apiKey).join("[redacted]")) : data;
    };
    const emit = (type: RunEventType, data: Record<string, unknown>) => ctx.emit(type, scrub(data));

    const area = await prepareAgentArea(ctx.workspace);
    const gatewayDir = await mkdtemp(join(tmpdir(), "dispatch-gateway-"));
    let gateway: ModelGateway | undefined;
    let steps = 0;
    try {
      const socketPath = join(gatewayDir, "model.sock");
      gateway = await ModelGateway.start({
        socketPath,
        route: this.route(apiKey),
        models: [model, ...this.alsoAllowed()],
        admit: (called) => {
          if (++steps > maxSteps) {
            halt("step_limit");
            return { status: 429, message: "Dispatch's step limit for this run is reached" };
          }
          // Under a cost limit a model without a price is refused, and the run stopped (run-cost.ts).
          const unpriced = called ? ctx.cost?.admit(`${this.modelProvider}/${called}`) : undefined;
          return unpriced ? { status: 403, message: unpriced } : undefined;
        },
        // Each call is priced as the gateway relays it: the run's cost limit stops the agent mid-turn.
        ...(ctx.cost
          ? {
              observe: {
                dialect: usageDialect(this.modelProvider),
                call: (call: ObservedCall) => {
                  const served = call.model ?? model;
                  ctx.cost?.charge(`${this.modelProvider}/${served}`, call);
                },
              },
            }
          : {}),
        log,
      });
      const relay = join(gatewayDir, "relay.mjs");
      await writeFile(relay, RELAY_SCRIPT, { mode: 0o644 });
      const resume = await savedSession(area, this.type);
      // On a new worker, a saved session already holds the input: the agent is told it moved.
      const input = ctx.resume && resume ? [ctx.resume.note] : ctx.input;
      const session = this.session({
        run: ctx.run,
        workspace: ctx.sandbox.workspace,
        // The agents' own plan modes are not used (docs/runtime.md, "Plan mode"): the instruction and the
        // read-only workspace are what hold them to planning.
        input: ctx.mode === "plan" ? withPlanInstruction(input) : input,
        resume,
        model,
        home: area.home,
        baseUrl: this.agentBaseUrl(),
      });
      const result = await this.drive(ctx, {
        session,
        // Each turn starts the agent afresh: a plan-mode turn's process sees the workspace read-only, the
        // turn after Approve's sees it writable, and both resume the same session from the agent's HOME.
        sandbox: await planTurnSandbox(ctx),
        program,
        relay: [nodeExecutable(), relay, socketPath],
        mounts: [gatewayDir, area],
        signal,
        emit,
        usage,
      });
      return await this.outcome(ctx, result, { stopReason, minutes, maxSteps, usage, emit });
    } finally {
      clearTimeout(timer);
      await gateway?.close();
      await rm(gatewayDir, { recursive: true, force: true });
      log.debug({ steps }, `${this.label} turn over`);
    }
  }

  /** Starts the agent behind the relay, reads its stream to the end, feeds it follow-ups. */
  private async drive(
    ctx: HarnessContext,
    d: {
      session: AgentSession;
      sandbox: Sandbox;
      program: AgentProgram;
      relay: string[];
      mounts: [string, AgentArea];
      signal: AbortSignal;
      emit: AgentIO["emit"];
      usage: RequestUsage;
    },
  ): Promise<DriveResult> {
    const { session, program } = d;
    const [gatewayDir, area] = d.mounts;
    await session.prepare?.();
    const proc = d.sandbox.start([...d.relay, "--", ...program.command, ...session.args], {
      signal: d.signal,
      env: {
        PATH: [...program.path, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"].join(":"),
        HOME: area.home,
        XDG_CONFIG_HOME: join(area.home, ".config"),
        XDG_CACHE_HOME: join(area.home, ".cache"),
        XDG_DATA_HOME: join(area.home, ".local", "share"),
        XDG_STATE_HOME: join(area.home, ".local", "state"),
        ...session.env,
      },
      mounts: [
        ...[d.relay[0]!, ...program.mounts].map((path) => ({ path, writable: false })),
        { path: gatewayDir, writable: false },
        { path: area.home, writable: true },
      ],
    });
    const { child } = proc;
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_TAIL);
    });

    let inputOpen = true;
    const closeInput = () => {
      if (!inputOpen) return;
      inputOpen = false;
      child.stdin.end();
    };
    let failure: string | undefined;
    let completed = false;
    // Questions not yet answered: a follow-up handed to the agent after them is the answer.
    let questions: string[] = [];
    const deliver = (messages: string[]) => {
      session.deliver!(messages, io);
      questions = [];
    };
    // Taking follow-ups and closing the input happen one at a time, so none is taken after the close.
    let inputChain: Promise<unknown> = Promise.resolve();
    const serial = <T>(step: () => Promise<T>): Promise<T> => {
      const next = inputChain.then(step, step);
      inputChain = next.catch(() => undefined);
      return next;
    };
    const io: AgentIO = {
      emit: d.emit,
      write: (line) => {
        if (inputOpen) child.stdin.write(`${line}\n`);
      },
      continueOrClose: () =>
        serial(async () => {
          if (!inputOpen) return false;
          const messages = session.deliver && !d.signal.aborted ? await ctx.takeFollowups() : [];
          if (messages.length > 0) {
            deliver(messages);
            return true;
          }
          closeInput();
          return false;
        }),
      closeInput: () => serial(async () => closeInput()),
      recordUsage: async (used) => {
        d.usage.input_tokens += used.input_tokens;
        d.usage.output_tokens += used.output_tokens;
        d.usage.total_tokens += used.input_tokens + used.output_tokens;
        await d.emit("usage", {
          input_tokens: used.input_tokens,
          output_tokens: used.output_tokens,
          total_tokens: used.input_tokens + used.output_tokens,
          harness: this.type,
        });
      },
      saveSession: (id) => saveSession(area, this.type, id),
      fail: (message) => {
        failure ??= message;
      },
      completed: () => {
        completed = true;
      },
      asked: (question) => {
        questions.push(question);
      },
    };

    session.begin(io);
    if (!session.liveInput) closeInput();
    const poll =
      session.liveInput && session.deliver
        ? setInterval(() => {
            void serial(async () => {
              if (!inputOpen || d.signal.aborted) return;
              const messages = await ctx.takeFollowups();
              if (messages.length > 0) deliver(messages);
            }).catch((err) => ctx.log.warn({ err }, "taking follow-ups failed"));
          }, this.opts.followupPollMs ?? 250)
        : undefined;
    try {
      const lines = createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY });
      for await (const line of lines) {
        if (!line.trim().startsWith("{")) continue;
        let event: Record<string, unknown>;
        try {
          event = JSON.parse(line);
        } catch {
          continue;
        }
        if (d.signal.aborted) continue;
        await session.handle(event, io);
      }
      const exit = await proc.exited;
      return {
        exit,
        stderr,
        failure,
        completed,
        ...(questions.length ? { question: questions.join("\n\n") } : {}),
      };
    } finally {
      if (poll) clearInterval(poll);
      await serial(async () => closeInput());
      await proc.stop();
    }
  }

  private async outcome(
    ctx: HarnessContext,
    r: DriveResult,
    s: {
      stopReason: "time_limit" | "step_limit" | undefined;
      minutes: number;
      maxSteps: number;
      usage: RequestUsage;
      emit: AgentIO["emit"];
    },
  ): Promise<HarnessOutcome> {
    const { usage } = s;
    if (ctx.signal.aborted) return { status: "failed", message: "aborted", errorCode: "aborted", usage };
    const failed = async (message: string, errorCode: string): Promise<HarnessOutcome> => {
      await s.emit("error", { message, error_code: errorCode });
      return { status: "failed", message, errorCode, usage };
    };
    if (s.stopReason === "time_limit") {
      return failed(
        `The agent ran out of time: max_run_minutes is ${s.minutes} minute${s.minutes === 1 ? "" : "s"}; raise config.max_run_minutes or split the task`,
        "time_limit",
      );
    }
    if (s.stopReason === "step_limit") {
      return failed(
        `${this.label} stopped after ${s.maxSteps} model calls (the step limit) without finishing; send a follow-up to let it continue`,
        "step_limit",
      );
    }
    if (r.failure) return failed(`${this.label} failed: ${r.failure}`, "agent_failed");
    const { code, signal, error } = r.exit;
    if (error) return failed(`${this.label} could not start: ${error.message}`, "agent_failed");
    if (code !== 0 || !r.completed) {
      const how = code !== 0 ? `exited with ${signal ? `signal ${signal}` : `code ${code}`}` : "ended";
      const tail = lastLines(r.stderr);
      return failed(
        `${this.label} ${how} without finishing its turn${tail ? `: ${tail}` : ""}`,
        "agent_failed",
      );
    }
    // The agent asked and nobody has answered yet: the run waits (model/run-gates.ts).
    if (r.question)
      return { status: "succeeded", usage, waitFor: { reason: "awaiting_input", message: r.question } };
    return { status: "succeeded", usage };
  }
}

interface DriveResult {
  exit: { code: number | null; signal: NodeJS.Signals | null; error?: Error };
  stderr: string;
  failure: string | undefined;
  completed: boolean;
  /** What the agent asked the person and nobody answered during the turn. */
  question?: string;
}

/** How the agent's provider reports usage in its responses. */
function usageDialect(provider: string): UsageDialect {
  if (provider === "anthropic") return "anthropic";
  if (provider === "gemini") return "gemini";
  return "openai";
}

/** `provider/model` → `model`; a bare name is the provider's own. */
function modelName(modelId: string): string {
  const slash = modelId.indexOf("/");
  return slash >= 0 ? modelId.slice(slash + 1) : modelId;
}

function lastLines(text: string): string {
  return text.trim().split("\n").slice(-5).join("\n").slice(-1000);
}
