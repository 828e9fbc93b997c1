/**
 * The command grammar shared by Slack and GitHub (shared/docs/INTEGRATIONS.md): what a person wrote
 * after `/agent` or `@bot`, turned into a verb, a prompt and run options.
 *
 *   <prompt> [options]            a new run; options are `key=value` anywhere or `[k=v, k="v w"]` groups
 *   new <prompt>                  a new run even in a thread that already has one
 *   cancel [run] · status [run]   the run is optional where the thread says which run is meant
 *   list · help
 *   followup <run_id> <message>   slash command only
 *   in owner/repo[@base] <prompt>  (Slack) a new run in that repository (DELIVERY.md), options as usual
 *   repo [owner/repo[@base] | none] (Slack) show, set or clear the channel's default repository
 *
 * Text inside code fences and inline code is always prompt. An unknown option key is an error listing
 * the valid keys (never silently dropped); a later duplicate key wins.
 */

import { parseRepositorySpec, type RepositorySpec } from "../model/repository.ts";

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
    }
  | { verb: "cancel"; runId?: string }
  | { verb: "status"; runId?: string }
  | { verb: "list" }
  | { verb: "help" }
  | { verb: "followup"; runId: string; message: string }
  /** Slack: the channel's default repository; `repository` null clears it, absent shows it. */
  | { verb: "repo"; repository?: RepositorySpec | null };

/** How repository specs are read (parseRepositorySpec): the server's GitHub URL, whether file:// is allowed. */
export interface RepositoryParsing {
  serverUrl: string;
  allowFileRemotes: boolean;
}

export interface GrammarOptions {
  /** Defaults to github.com without file remotes; the run service checks the spec again at create. */
  repositories?: RepositoryParsing;
}

const DEFAULT_PARSING: RepositoryParsing = { serverUrl: "https://github.com", allowFileRemotes: false };

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
    case "repo":
      if (!slack) break;
      // `repo` alone shows, `repo none` clears, `repo <spec>` sets; more words are a prompt ("repo is slow…").
      if (rest === "") return { verb: "repo" };
      if (restWords.length === 1) {
        if (/^(none|clear|off|-)$/i.test(rest)) return { verb: "repo", repository: null };
        return { verb: "repo", repository: repositoryOrThrow(rest, parsing) };
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
  harness?: { type: string };
}): RunOptions {
  const out: RunOptions = {};
  if (config.model_id) out.model = config.model_id;
  if (config.environment_id) out.env = config.environment_id;
  if (config.name) out.name = config.name;
  if (config.skill_spec) out.skill = config.skill_spec;
  if (config.harness?.type) out.harness = config.harness.type;
  return out;
}

/**
 * The RunsApi create body for parsed options (`env` → environment_id, `skill` → skill) and, when given,
 * the repository (`config.repository`, `config.base_branch`).
 */
export function createBody(prompt: string, options: RunOptions, repository?: RepositorySpec) {
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
