import { parseArgs } from "node:util";
import {
  type CreateRunRequest,
  type Dispatch,
  isTerminalState,
  type ListRunsQuery,
  type RunEvent,
  type RunItem,
} from "@agent-dispatch/client";
import { agentWords } from "../model/agent-wording.ts";
import { deliveryLine, deliverySummary, repositoryLabel } from "../model/delivery-summary.ts";
import { costText } from "../model/run-wording.ts";
import {
  apiClient,
  EXIT_FAILED,
  EXIT_OK,
  printJSON,
  reportApiError,
  table,
  UsageError,
} from "./api-output.ts";
import { answerBudget } from "./budget-commands.ts";
import { answerHint, answerPlan, EXIT_WAITING, stateCell, stillWaitingAt } from "./plan-commands.ts";
import { RUNS_USAGE, type RunCommand } from "./run-commands.ts";
import { agoCell, durationText, whenLine } from "./time-text.ts";
import { renderEvent, StatusLine, stylesFor } from "./transcript.ts";

const EXIT_INTERRUPTED = 130;

/** The run commands: the API over HTTP through the TypeScript client, from any machine. */
export async function runCommand(command: RunCommand, argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`Usage:\n${RUNS_USAGE}\n`);
    return EXIT_OK;
  }
  try {
    switch (command) {
      case "run":
        return await create(argv);
      case "list":
        return await list(argv);
      case "get":
        return await get(argv);
      case "followup":
        return await followup(argv);
      case "cancel":
        return await cancel(argv);
      case "logs":
        return await logs(argv);
      case "diff":
        return await diff(argv);
      case "approve":
      case "revise":
        return await answerPlan(command, argv);
      case "budget":
        return await answerBudget(argv);
    }
  } catch (err) {
    return reportApiError(err, RUNS_USAGE);
  }
}

async function create(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      model: { type: "string" },
      env: { type: "string" },
      skill: { type: "string" },
      repo: { type: "string" },
      title: { type: "string" },
      plan: { type: "boolean" },
      follow: { type: "boolean", short: "f" },
      json: { type: "boolean" },
    },
  });
  let prompt = positionals.join(" ");
  if (prompt === "-") prompt = await readStdin();
  if (prompt.trim() === "" && !values.skill) throw new UsageError("give a prompt (or --skill)");
  const config: NonNullable<CreateRunRequest["config"]> = {
    ...(values.name ? { name: values.name } : {}),
    ...(values.model ? { model_id: values.model } : {}),
    ...(values.env ? { environment_id: values.env } : {}),
    ...(values.repo ? { repository: values.repo } : {}),
  };
  const body: CreateRunRequest = {
    ...(prompt.trim() !== "" ? { prompt } : {}),
    ...(values.title ? { title: values.title } : {}),
    ...(values.skill ? { skill: values.skill } : {}),
    ...(Object.keys(config).length ? { config } : {}),
    ...(values.plan ? { mode: "plan" as const } : {}),
  };
  const dispatch = apiClient();
  const created = await dispatch.runs.create(body);
  if (!values.follow) {
    if (values.json) printJSON(created);
    else {
      process.stdout.write(`${created.run_id}\n`);
      process.stderr.write(`Queued. Follow it with: dispatch logs ${created.run_id} --follow\n`);
    }
    return EXIT_OK;
  }
  if (!values.json) process.stderr.write(`Run ${created.run_id} queued.\n`);
  return follow(dispatch, created.run_id, { json: Boolean(values.json) });
}

async function list(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      state: { type: "string", multiple: true },
      name: { type: "string" },
      limit: { type: "string" },
      json: { type: "boolean" },
    },
  });
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError("--limit must be a whole number ≥ 1");
  const states = (values.state ?? []).flatMap((s) => s.split(",")).map((s) => s.trim().toUpperCase());
  const query: ListRunsQuery = {
    limit: Math.min(limit, 500),
    ...(states.length ? { state: states as NonNullable<ListRunsQuery["state"]> } : {}),
    ...(values.name ? { name: values.name } : {}),
  };
  const runs: RunItem[] = [];
  for await (const run of apiClient().runs.list(query)) {
    runs.push(run);
    if (runs.length >= limit) break;
  }
  if (values.json) {
    printJSON(runs);
    return EXIT_OK;
  }
  const now = Date.now();
  const rows = runs.map((r) => [
    r.run_id,
    stateCell(r),
    agoCell(r.updated_at, now),
    r.title.replace(/\s+/g, " "),
  ]);
  process.stdout.write(table([["RUN ID", "STATE", "UPDATED", "TITLE"], ...rows]));
  return EXIT_OK;
}

async function get(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  const run = await apiClient().runs.retrieve(runIdFrom(positionals));
  if (values.json) {
    printJSON(run);
    return EXIT_OK;
  }
  const s = stylesFor(process.stdout);
  const fields: Array<[string, string | undefined]> = [
    ["run", run.run_id],
    ["title", run.title],
    ["state", run.status_message ? `${stateCell(run)}: ${run.status_message.message}` : run.state],
    ["created", whenLine(run.created_at)],
    ["updated", whenLine(run.updated_at)],
    ["started", whenLine(run.started_at)],
    ["finished", whenLine(run.finished_at)],
    ["run time", durationText(run.run_time)],
    ["cost", costText(run) || undefined],
    ["name", run.agent_config.name ?? undefined],
    // Which agent ran, with its model (agent-wording.ts); a run without a harness shows its model alone.
    ["agent", agentWords(run.agent_config)],
    ["model", run.agent_config.harness ? undefined : (run.agent_config.model_id ?? undefined)],
    ["creator", run.creator.display_name],
    ["session", run.session_link],
    ...deliveryFields(run),
    // The pull request and the patch are shown above; any other artifact as it is.
    ...run.artifacts
      .filter((a) => a.artifact_type !== "PULL_REQUEST" && a.artifact_type !== "FILE")
      .map((a): [string, string] => [
        "artifact",
        `${a.artifact_type} ${String(("url" in a.data ? a.data.url : a.data.title) ?? "")}`,
      ]),
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  for (const [key, value] of fields) {
    if (value) process.stdout.write(`${s.dim(key.padEnd(width))}  ${value}\n`);
  }
  process.stdout.write(`\n${run.prompt}\n`);
  const hint = answerHint(run);
  if (hint) process.stderr.write(`\n${hint}\n`);
  return EXIT_OK;
}

/** Where the run's work went: repository@base, branch, pull request and the latest patch's diff stat. */
function deliveryFields(run: RunItem): Array<[string, string | undefined]> {
  const summary = deliverySummary(run);
  if (!summary) return [];
  return [
    ["repository", repositoryLabel(summary)],
    ["branch", summary.branch],
    ["delivery", deliveryLine(summary)],
    ["pull request", summary.pullRequest?.url],
    ["diff", summary.diffStat ? `${summary.diffStat} (dispatch diff ${run.run_id})` : undefined],
  ];
}

/** Prints the run's latest patch (its last changes.patch FILE artifact) as it is, for `git apply`. */
async function diff(argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  const runId = runIdFrom(positionals);
  const dispatch = apiClient();
  const run = await dispatch.runs.retrieve(runId);
  const summary = deliverySummary(run);
  if (!summary?.patchUid) {
    const why = !summary
      ? "it names no repository (create runs with --repo owner/repo to have their changes delivered)"
      : summary.noChanges
        ? "it changed nothing"
        : isTerminalState(run.state)
          ? "no changes were recorded"
          : `it is ${run.state}; the patch is recorded when an execution ends`;
    process.stderr.write(`dispatch: run ${runId} has no patch: ${why}.\n`);
    return EXIT_FAILED;
  }
  const bytes = await dispatch.artifacts.download(summary.patchUid);
  await new Promise<void>((resolve, reject) =>
    process.stdout.write(bytes, (err) => (err ? reject(err) : resolve())),
  );
  return EXIT_OK;
}

async function followup(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  const runId = runIdFrom(positionals);
  let message = positionals.slice(1).join(" ");
  if (message === "-") message = await readStdin();
  if (message.trim() === "") throw new UsageError("give the follow-up message");
  const sent = await apiClient().runs.followup(runId, { message });
  if (values.json) printJSON(sent);
  else {
    const where = {
      queued_prompt: "the run has not started; the agent receives it when it does",
      live_session: "delivered to the running agent at its next step",
      queue_pending: "the run is getting ready; the agent receives it when it starts",
      handoff_execution: "the run is queued again to continue the conversation",
    }[sent.outcome];
    process.stdout.write(`${sent.followup_id}\n`);
    process.stderr.write(`Sent (${sent.outcome}): ${where ?? sent.outcome}.\n`);
  }
  return EXIT_OK;
}

async function cancel(argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: {} });
  const id = await apiClient().runs.cancel(runIdFrom(positionals));
  process.stdout.write(`Cancelled ${id}\n`);
  return EXIT_OK;
}

async function logs(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      follow: { type: "boolean", short: "f" },
      json: { type: "boolean" },
    },
  });
  const runId = runIdFrom(positionals);
  const dispatch = apiClient();
  if (values.follow) return follow(dispatch, runId, { json: Boolean(values.json) });
  const s = stylesFor(process.stdout);
  let after = 0;
  for (;;) {
    const page = await dispatch.runs.listEvents(runId, { after, limit: 1000 });
    for (const event of page.events) printEvent(event, Boolean(values.json), s);
    if (page.events.length === 0 || page.next_after === after) break;
    after = page.next_after;
  }
  return EXIT_OK;
}

/**
 * Streams the transcript until the run is terminal with nothing after that state change (a finished
 * run that was followed up continues), then returns the exit status for its final state.
 */
async function follow(dispatch: Dispatch, runId: string, opts: { json: boolean }): Promise<number> {
  const s = stylesFor(process.stdout);
  const status = new StatusLine(process.stderr, Boolean(process.stderr.isTTY) && !opts.json);
  const interrupt = new AbortController();
  const onSigint = () => interrupt.abort();
  process.once("SIGINT", onSigint);
  status.start("connecting");
  try {
    let state: string | undefined;
    // The stream ends after the state event that finished the run, when nothing came after it.
    for await (const event of dispatch.runs.events(runId, {}, { signal: interrupt.signal })) {
      if (event.type === "state") status.state = state = String(event.data.state);
      status.above(() => printEvent(event, opts.json, s));
      // A run waiting for a person is not finished, and nothing happens until someone answers it.
      const blocked = event.type === "state" && state === "BLOCKED";
      const waiting = blocked ? await stillWaitingAt(dispatch, runId, event.seq) : undefined;
      if (waiting) {
        status.stop();
        if (!opts.json) process.stderr.write(`${answerHint(waiting)}\n`);
        return EXIT_WAITING;
      }
    }
    status.stop();
    if (state === undefined || !isTerminalState(state)) return EXIT_FAILED;
    if (!opts.json) {
      const line = `Run ${runId} ${state}.`;
      const e = stylesFor(process.stderr);
      process.stderr.write(`${state === "SUCCEEDED" ? e.green(line) : e.red(line)}\n`);
    }
    return state === "SUCCEEDED" ? EXIT_OK : EXIT_FAILED;
  } catch (err) {
    if (interrupt.signal.aborted) {
      status.stop();
      process.stderr.write(`\nStopped following; the run goes on (dispatch logs ${runId} --follow).\n`);
      return EXIT_INTERRUPTED;
    }
    throw err;
  } finally {
    status.stop();
    process.off("SIGINT", onSigint);
  }
}

function printEvent(event: RunEvent, json: boolean, s: ReturnType<typeof stylesFor>): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(event)}\n`);
    return;
  }
  const text = renderEvent(event, s);
  if (text !== undefined) process.stdout.write(`${text}\n`);
}

function runIdFrom(positionals: string[]): string {
  const id = positionals[0];
  if (!id) throw new UsageError("give the run id (see dispatch list)");
  return id;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
