/**
 * The command grammar shared by Slack, GitHub and Jira, and by Linear for a plan's answer
 * (docs/surfaces.md): what a person wrote after `/agent` or `@bot`, turned into a verb, a prompt and run
 * options.
 *
 *   <prompt> [options]            a new run; options are `key=value` anywhere or `[k=v, k="v w"]` groups
 *   new <prompt>                  a new run even in a thread that already has one
 *   plan <prompt> [options]       a new run in plan mode: its plan waits for approval (docs/surfaces.md)
 *   approve [run] [note]          carry out the plan the run waits to have approved (same run, normal mode)
 *   revise [run] <changes>        have that plan revised with these changes (plan mode again)
 *   extend [run] $<usd> · stop [run]  (GitHub, Jira, Linear) extend the budget a run waits for, or stop it
 *                                 there (Slack has the card's buttons)
 *   cancel [run] · status [run]   the run is optional where the thread says which run is meant
 *   list · help
 *   followup <run_id> <message>   slash command only
 *   in owner/repo[@base] <prompt>  (Slack) a new run in that repository (docs/delivery.md), options as usual
 *   repo [owner/repo[@base] | none] (Slack) show, set or clear the channel's default repository
 *   agent [claude|codex|gemini|builtin|scripted | none]  (Slack) show, set or clear the channel's default agent
 *   --agent <name> anywhere in a new run's text selects its agent (the `harness` option; agent-wording.ts)
 *   /codex <prompt> · /claude … · /gemini … · /builtin …   (GitHub) a new run with that agent
 *   schedule "<cron>" [name:<name>] <prompt> [options]   (Slack) runs the prompt on that cron, reporting here
 *   schedules · unschedule <name>  (Slack) the channel's schedules; delete one
 *   login                         (Slack, slash command only) a one-time link that signs the user in to the web app
 *   login [XXXX-XXXX]             (GitHub) how to sign in to the web app; with the code a browser shows, approves it
 *
 * Text inside code fences and inline code is always prompt. An unknown option key is an error listing
 * the valid keys (never silently dropped); a later duplicate key wins.
 */

import { agentKeyOf, unknownAgentText } from "../model/agent-wording.ts";
import { parseRepositorySpec, type RepositoryParsing, type RepositorySpec } from "../model/repository.ts";

export const OPTION_KEYS = ["model", "name", "env", "skill", "title", "harness"] as const;
export type OptionKey = (typeof OPTION_KEYS)[number];
export type RunOptions = Partial<Record<OptionKey, string>>;

export type Surface = "slash" | "mention" | "github";

export type Command =
  | {
      verb: "run";
      prompt: string;
      options: RunOptions;
      forceNew: boolean;
      /** `in owner/repo[@base]` at the start (Slack): the run's repository; absent otherwise. */
      repository?: RepositorySpec;
      /** `plan …`: the run plans first and waits for its plan to be approved. */
      mode?: "plan";
    }
  /** The answer to a plan that waits for approval; the run is the thread's unless named. */
  | { verb: "approve"; runId?: string; note?: string }
  | { verb: "revise"; runId?: string; changes: string }
  /** The answer to a run that waits for budget (tracker surfaces); the run is the thread's unless named. */
  | { verb: "extend"; runId?: string; amountUsd: number }
  | { verb: "stop"; runId?: string }
  | { verb: "cancel"; runId?: string }
  | { verb: "status"; runId?: string }
  | { verb: "list" }
  | { verb: "help" }
  | { verb: "followup"; runId: string; message: string }
  /** Slack: the channel's default repository; `repository` null clears it, absent shows it. */
  | { verb: "repo"; repository?: RepositorySpec | null }
  /** Slack: the channel's default agent (a harness registry key); `agent` null clears it, absent shows it. */
  | { verb: "agent"; agent?: string | null }
  /**
   * Slack: a schedule reporting to the channel. `run` is what each firing starts (prompt, options,
   * `in owner/repo`); `name` is absent when the schedule is to be named after its prompt.
   */
  | { verb: "schedule"; cron: string; name?: string; run: Command & { verb: "run" } }
  | { verb: "schedules" }
  | { verb: "unschedule"; name: string }
  /**
   * Slack slash command: a one-time web sign-in link, answered only to the person who asked. GitHub: how
   * to sign in, or with `code` (the one a browser shows) the approval of that browser's sign-in.
   */
  | { verb: "login"; code?: string };

export interface GrammarOptions {
  /** Defaults to github.com without file remotes; the run service checks the spec again at create. */
  repositories?: RepositoryParsing;
}

const DEFAULT_PARSING: RepositoryParsing = {
  serverUrl: "https://github.com",
  allowFileRemotes: false,
  allowedHosts: [],
};

export class GrammarError extends Error {}

const VALID_KEYS = OPTION_KEYS.join(", ");

/** Parses one command. Throws GrammarError with a message meant for the person who wrote it. */
export function parseCommand(text: string, surface: Surface, opts: GrammarOptions = {}): Command {
  const parsing = opts.repositories ?? DEFAULT_PARSING;
  // GitHub runs work in the repository they were asked in: `in …` and `repo` are Slack's.
  const slack = surface !== "github";
  const trimmed = text.trim();
  if (trimmed === "") return { verb: "help" };
  const [first = "", ...restWords] = trimmed.split(/\s+/);
  const verb = first.toLowerCase();
  const rest = trimmed.slice(first.length).trim();
  if (!slack && /^\/[a-z]+$/.test(verb)) return parseAgentRun(verb.slice(1), rest);

  switch (verb) {
    case "help":
    case "list":
      // "list the files under src/" is a prompt; the verbs stand alone.
      if (rest === "") return { verb };
      break;
    case "cancel":
    case "status":
      if (rest === "") return { verb };
      if (restWords.length === 1 && /^[A-Za-z0-9_-]{1,128}$/.test(rest)) return { verb, runId: rest };
      break;
    case "new": {
      if (rest === "") throw new GrammarError("`new` needs a prompt: new <prompt> [options]");
      return slack ? parseRunIn(rest, true, parsing) : parseRun(rest, true);
    }
    case "plan": {
      if (rest === "") throw new GrammarError("`plan` needs a prompt: plan <prompt> [options]");
      return { ...(slack ? parseRunIn(rest, true, parsing) : parseRun(rest, true)), mode: "plan" };
    }
    case "approve":
    case "revise":
      return parsePlanAnswer(verb, rest);
    case "extend":
    case "stop": {
      // Slack answers a budget with the card's buttons; there these words start a prompt as before.
      if (surface !== "github") break;
      const answer = parseBudgetAnswer(verb, rest);
      if (answer) return answer;
      break;
    }
    case "repo":
      if (!slack) break;
      // `repo` alone shows, `repo none` clears, `repo <spec>` sets; more words are a prompt ("repo is slow…").
      if (rest === "") return { verb: "repo" };
      if (restWords.length === 1) {
        if (/^(none|clear|off|-)$/i.test(rest)) return { verb: "repo", repository: null };
        return { verb: "repo", repository: repositoryOrThrow(rest, parsing) };
      }
      break;
    case "agent":
      if (!slack) break;
      // Like `repo`: alone shows, `none` clears, one name sets; more words are a prompt ("agent keeps…").
      if (rest === "") return { verb: "agent" };
      if (restWords.length === 1) {
        if (/^(none|clear|off|default|-)$/i.test(rest)) return { verb: "agent", agent: null };
        return { verb: "agent", agent: agentOrThrow(rest) };
      }
      break;
    case "schedule":
      if (!slack) break;
      {
        const scheduled = parseSchedule(rest, parsing);
        if (scheduled) return scheduled;
      }
      break;
    case "schedules":
      if (slack && rest === "") return { verb: "schedules" };
      break;
    case "unschedule":
      if (!slack) break;
      if (rest === "") throw new GrammarError("which schedule? unschedule <name> (`schedules` lists them)");
      return { verb: "unschedule", name: unquote(rest) };
    case "login":
      // Ephemeral only: a mention is answered in the channel's thread, where a link must not appear.
      if (surface === "slash" && rest === "") return { verb: "login" };
      // GitHub: the code a browser shows; any other words are a prompt ("login fails on Safari").
      if (surface === "github" && rest === "") return { verb: "login" };
      if (surface === "github" && /^[A-Za-z0-9]{4}-[A-Za-z0-9]{4}$/.test(rest)) {
        return { verb: "login", code: rest.toUpperCase() };
      }
      break;
    case "followup":
      if (surface !== "slash") break;
      {
        const match = /^(\S+)\s+([\s\S]*\S)\s*$/.exec(rest);
        if (!match) throw new GrammarError("usage: followup <run_id> <message>");
        return { verb: "followup", runId: match[1]!, message: match[2]! };
      }
  }
  return slack ? parseRunIn(trimmed, false, parsing) : parseRun(trimmed, false);
}

/** A run id as the API gives them (a UUID): only such a word after `approve` or `revise` names a run. */
const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `approve [run] [note]` and `revise [run] <changes>`, after the verb. */
function parsePlanAnswer(verb: "approve" | "revise", rest: string): Command {
  const [first = ""] = rest.split(/\s+/);
  const runId = RUN_ID.test(first) ? first : undefined;
  const text = (runId ? rest.slice(first.length) : rest).trim();
  const run = runId ? { runId } : {};
  if (verb === "approve") return { verb, ...run, ...(text ? { note: text } : {}) };
  if (text === "") throw new GrammarError("say what to change in the plan: revise <changes>");
  return { verb, ...run, changes: text };
}

/** An amount of US dollars as people write it: `$5`, `5`, `2.50`, `$2.50 usd`. */
const USD = /^\$?(\d{1,6}(?:\.\d{1,2})?)(?:\s*(?:usd|dollars?))?$/i;

/**
 * `extend [run] $<usd>` and `stop [run]`, after the verb; undefined when the words are a prompt ("stop the
 * flaky test…", "extend the parser…"). `extend` with no amount says how to give one.
 */
function parseBudgetAnswer(verb: "extend" | "stop", rest: string): Command | undefined {
  const [first = ""] = rest.split(/\s+/);
  const runId = RUN_ID.test(first) ? first : undefined;
  const text = (runId ? rest.slice(first.length) : rest).trim();
  const run = runId ? { runId } : {};
  if (verb === "stop") return text === "" ? { verb, ...run } : undefined;
  if (text === "") throw new GrammarError("say by how much: extend $5 (US dollars)");
  const amount = USD.exec(text);
  if (!amount) return undefined;
  const amountUsd = Number(amount[1]);
  if (amountUsd <= 0) throw new GrammarError("extend by more than $0: extend $5 (US dollars)");
  return { verb, ...run, amountUsd };
}

/**
 * `schedule "<cron>" [name:<name>] <prompt> [options]`, after the verb. The cron must be quoted (its
 * fields have spaces); text that does not start like a cron ("schedule a call with…") is a prompt
 * (undefined), but an unquoted cron is an error rather than a run that was not meant.
 */
function parseSchedule(rest: string, parsing: RepositoryParsing): Command | undefined {
  const usage =
    'schedule "<cron>" [name:<name>] <prompt> [options], e.g. schedule "0 9 * * 1-5" Summarise open PRs';
  if (rest === "") throw new GrammarError(`usage: ${usage}`);
  const quoted = /^(?:"([^"]*)"|[“”]([^“”"]*)[“”"]|'([^']*)'|`([^`]*)`)(?=\s|$)/.exec(rest);
  if (!quoted) {
    if (/^[\d*@]/.test(rest)) throw new GrammarError(`put the cron expression in quotes: ${usage}`);
    return undefined;
  }
  const cron = (quoted[1] ?? quoted[2] ?? quoted[3] ?? quoted[4] ?? "").trim();
  let after = rest.slice(quoted[0].length).trim();
  let name: string | undefined;
  const named = /^name:(?:"([^"]*)"|[“”]([^“”"]*)[“”"]|(\S*))(?=\s|$)/i.exec(after);
  if (named) {
    name = (named[1] ?? named[2] ?? named[3] ?? "").trim();
    if (name === "") throw new GrammarError('give the schedule a name: name:<name> or name:"two words"');
    after = after.slice(named[0].length).trim();
  }
  if (after === "") throw new GrammarError(`say what the agent should do on each run: ${usage}`);
  return { verb: "schedule", cron, ...(name ? { name } : {}), run: parseRunIn(after, true, parsing) };
}

/** A name as typed, with surrounding quotes (straight or curly) removed. */
function unquote(text: string): string {
  const match = /^["“”'`](.*)["“”'`]$/.exec(text.trim());
  return (match ? match[1]! : text).trim();
}

/**
 * A new run that may start with `in owner/repo[@base]` (or `in <git URL>`): the words set the run's
 * repository and the rest is the prompt with its options. Only a word with a `/` counts as a repository,
 * so "in the parser, fix…" stays prose; a word with a `/` that is not a repository is an error saying why.
 */
function parseRunIn(text: string, forceNew: boolean, parsing: RepositoryParsing): Command & { verb: "run" } {
  const match = /^in\s+([^\s`]*\/[^\s`]*)(?:\s+|$)/i.exec(text);
  if (!match) return parseRun(text, forceNew);
  const repository = repositoryOrThrow(match[1]!, parsing);
  const rest = text.slice(match[0].length);
  if (rest.trim() === "") {
    throw new GrammarError(`say what to do in ${match[1]}: in owner/repo[@branch] <prompt> [options]`);
  }
  return { ...parseRun(rest, forceNew), repository };
}

/** A repository spec as parseRepositorySpec reads it, or a GrammarError with its reason. */
function repositoryOrThrow(spec: string, parsing: RepositoryParsing): RepositorySpec {
  const parsed = parseRepositorySpec(spec, parsing);
  if (typeof parsed === "string") throw new GrammarError(`repository: ${parsed}`);
  return parsed;
}

/**
 * `/codex <prompt> [options]` (GitHub): a new run with that agent, even on an issue that has a run (the
 * agent of a run cannot change). An unknown `/word` is an error listing the agents, not a prompt that
 * happened to start with a slash: a path is written in `code`.
 */
function parseAgentRun(name: string, rest: string): Command & { verb: "run" } {
  const key = agentKeyOf(name);
  if (!key) {
    throw new GrammarError(`${unknownAgentText(name)} (to start a prompt with a path, write it in \`code\`)`);
  }
  if (rest === "") throw new GrammarError(`say what ${name} should do: /${name} <prompt> [options]`);
  const run = parseRun(rest, true);
  return { ...run, options: { ...run.options, harness: key } };
}

/**
 * Words that are commands on a tracker's issue (GitHub, Jira) that already has a run; anything else
 * written there is a follow-up to that run.
 */
export const TRACKER_VERBS: ReadonlySet<string> = new Set([
  "cancel",
  "status",
  "help",
  "list",
  "new",
  "login",
  "plan",
  "approve",
  "revise",
  "extend",
  "stop",
]);

/** Whether a comment's first word selects an agent (`/codex`): a new run, never a follow-up. */
export function selectsAgent(word: string): boolean {
  return /^\/[a-z]+$/i.test(word) && agentKeyOf(word.slice(1)) !== undefined;
}

/** An agent name as agent-wording.ts knows it (its registry key), or a GrammarError listing the names. */
function agentOrThrow(typed: string): string {
  const key = agentKeyOf(typed);
  if (!key) throw new GrammarError(unknownAgentText(typed));
  return key;
}

/** `owner/repo@base` (or the URL) as people write it back. */
export function describeRepository(spec: RepositorySpec): string {
  return spec.base ? `${spec.repository}@${spec.base}` : spec.repository;
}

/** A new run's prompt and options, with code spans left as they are. */
export function parseRun(text: string, forceNew: boolean): Command & { verb: "run" } {
  const options: RunOptions = {};
  let prompt = "";
  for (const segment of splitCode(text)) {
    prompt += segment.code ? segment.text : extractOptions(segment.text, options);
  }
  prompt = prompt
    .split("\n")
    .map((line) => line.replace(/[ \t]+$/, ""))
    .join("\n")
    .trim();
  if (prompt === "" && !options.skill) {
    throw new GrammarError("a prompt is needed (or skill=<owner/repo:skill>): <prompt> [options]");
  }
  return { verb: "run", prompt, options, forceNew };
}

/** `model=… · env=… · name=…`: the options echoed back to people, in a fixed order. */
export function describeOptions(options: RunOptions): string {
  const order: OptionKey[] = ["model", "env", "name", "skill", "harness", "title"];
  return order
    .filter((k) => options[k] !== undefined && options[k] !== "")
    .map((k) => `${k}=${quoteIfNeeded(options[k]!)}`)
    .join(" · ");
}

/** The options a run actually resolved to (RunItem.agent_config), in the grammar's own words. */
export function optionsFromAgentConfig(config: {
  model_id?: string;
  name?: string;
  environment_id?: string;
  skill_spec?: string;
  harness?: { type: string; name?: string };
}): RunOptions {
  const out: RunOptions = {};
  if (config.model_id) out.model = config.model_id;
  if (config.environment_id) out.env = config.environment_id;
  if (config.name) out.name = config.name;
  if (config.skill_spec) out.skill = config.skill_spec;
  // Dispatch's own harnesses are {type: "oz", name} on the wire; the grammar names them by name.
  if (config.harness?.type) out.harness = config.harness.name ?? config.harness.type;
  return out;
}

/**
 * The RunsApi create body for parsed options (`env` → environment_id, `skill` → skill) and, when given,
 * the repository (`config.repository`, `config.base_branch`) and the mode (`plan`).
 */
export function createBody(prompt: string, options: RunOptions, repository?: RepositorySpec, mode?: "plan") {
  const config: Record<string, unknown> = {};
  if (repository) {
    config.repository = repository.repository;
    if (repository.base) config.base_branch = repository.base;
  }
  if (options.model) config.model_id = options.model;
  if (options.name) config.name = options.name;
  if (options.env) config.environment_id = options.env;
  if (options.harness) config.harness = { type: options.harness };
  return {
    ...(prompt ? { prompt } : {}),
    ...(options.title ? { title: options.title } : {}),
    ...(options.skill ? { skill: options.skill } : {}),
    ...(Object.keys(config).length > 0 ? { config } : {}),
    ...(mode ? { mode } : {}),
  };
}

function quoteIfNeeded(value: string): string {
  return /[\s,\]"]/.test(value) ? `"${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"` : value;
}

// --- scanning ----------------------------------------------------------------------------------

interface Segment {
  code: boolean;
  text: string;
}

/** Splits text into code spans (``` fences, possibly unterminated, and `inline`) and the rest. */
function splitCode(text: string): Segment[] {
  const segments: Segment[] = [];
  const pattern = /```[\s\S]*?(?:```|$)|`[^`\n]+`/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) segments.push({ code: false, text: text.slice(last, match.index) });
    segments.push({ code: true, text: match[0] });
    last = match.index + match[0].length;
  }
  if (last < text.length) segments.push({ code: false, text: text.slice(last) });
  return segments;
}

const OPEN_QUOTES: Record<string, string> = { '"': '"', "“": "”", "”": "”" };

/** Removes the options from plain (non-code) text into `into`, returning what is left of the text. */
function extractOptions(text: string, into: RunOptions): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const atWordStart = i === 0 || /\s/.test(text[i - 1]!);
    if (atWordStart && text[i] === "[") {
      const group = readBracketGroup(text, i);
      if (group) {
        for (const [key, value] of group.pairs) assign(into, key, value);
        i = skipBlanks(text, group.end);
        continue;
      }
    }
    if (atWordStart) {
      // `--agent claude` (or `--agent=claude`): the agent for the run, as the `harness` option.
      const flag = /^(?:--|—|–)agent(?:(?:=|[ \t]+)([^\s,\]]*))?(?=[\s,\]]|$)/i.exec(text.slice(i, i + 80));
      if (flag) {
        if (!flag[1]) throw new GrammarError("`--agent` needs a name: --agent claude|codex|gemini|builtin");
        into.harness = agentOrThrow(flag[1]);
        i = skipBlanks(text, i + flag[0].length);
        continue;
      }
      const pair = readPair(text, i, /\s/);
      if (pair) {
        assign(into, pair.key, pair.value);
        i = skipBlanks(text, pair.end);
        continue;
      }
    }
    out += text[i];
    i += 1;
  }
  return out;
}

/** After a removed option, skips the blanks that followed it so that no double space is left. */
function skipBlanks(text: string, end: number): number {
  let j = end;
  while (j < text.length && (text[j] === " " || text[j] === "\t")) j += 1;
  return j;
}

function assign(into: RunOptions, rawKey: string, value: string): void {
  const key = rawKey.toLowerCase();
  if (!(OPTION_KEYS as readonly string[]).includes(key)) {
    throw new GrammarError(`unknown option "${rawKey}"; valid keys are: ${VALID_KEYS}`);
  }
  if (value === "") throw new GrammarError(`option "${key}" needs a value (${key}=…)`);
  into[key as OptionKey] = value;
}

/** `key=value` at `start`: the value is quoted ("…", “…”) or runs until a character matching `stop`. */
function readPair(
  text: string,
  start: number,
  stop: RegExp,
): { key: string; value: string; end: number } | undefined {
  const keyMatch = /^([A-Za-z][A-Za-z0-9_-]*)=/.exec(text.slice(start, start + 65));
  if (!keyMatch) return undefined;
  const key = keyMatch[1]!;
  let i = start + keyMatch[0].length;
  const open = text[i];
  if (open !== undefined && open in OPEN_QUOTES) {
    const close = OPEN_QUOTES[open]!;
    let value = "";
    i += 1;
    while (i < text.length && text[i] !== close && !(close === "”" && text[i] === '"')) {
      if (text[i] === "\\" && i + 1 < text.length) i += 1;
      value += text[i];
      i += 1;
    }
    if (i >= text.length) throw new GrammarError(`the value of "${key}" has no closing quote`);
    return { key, value, end: i + 1 };
  }
  // `a==b` and `x=` followed by nothing are not options but prose or code.
  if (open === "=") return undefined;
  let value = "";
  while (i < text.length && !stop.test(text[i]!)) {
    value += text[i];
    i += 1;
  }
  if (value === "" && open !== undefined && !/\s/.test(open)) return undefined;
  return { key, value, end: i };
}

/**
 * `[k=v, k="v w"]` at `start`. Anything else in brackets ("[WIP] fix it", a markdown link) is prose and
 * yields undefined.
 */
function readBracketGroup(
  text: string,
  start: number,
): { pairs: Array<[string, string]>; end: number } | undefined {
  const pairs: Array<[string, string]> = [];
  let i = start + 1;
  for (;;) {
    while (i < text.length && /[ \t]/.test(text[i]!)) i += 1;
    let pair: ReturnType<typeof readPair>;
    try {
      pair = readPair(text, i, /[\s,\]]/);
    } catch {
      return undefined;
    }
    if (!pair) return undefined;
    pairs.push([pair.key, pair.value]);
    i = pair.end;
    while (i < text.length && /[ \t]/.test(text[i]!)) i += 1;
    if (text[i] === ",") {
      i += 1;
      continue;
    }
    if (text[i] === "]") return { pairs, end: i + 1 };
    return undefined;
  }
}
