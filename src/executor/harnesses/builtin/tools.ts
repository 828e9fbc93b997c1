import { lstat, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { jsonSchema, type ToolSet, tool } from "ai";
import type { Sandbox } from "../../sandbox.ts";

/**
 * The agent's tools. Every command runs through the run's sandbox and every path goes through
 * `sandbox.resolvePath`, which refuses anything outside the workspace (symlinks included); directory
 * walks never follow symlinks. Outputs are capped and the cap is stated to the model.
 */

/** What a tool returns: recorded as-is on the transcript, turned into text for the model. */
export interface ToolOutput {
  output: string;
  truncated?: boolean;
  /** Shell only. */
  exit_code?: number | null;
  timed_out?: boolean;
  /** The tool could not do what was asked (bad path, edit not found, …). */
  error?: boolean;
}

export interface ToolLimits {
  /** Characters of tool output the model receives. */
  outputChars: number;
  /** Default and maximum shell command timeout. */
  commandTimeoutMs: number;
  maxCommandTimeoutMs: number;
  /** Largest file read_file/search_files look at. */
  maxFileBytes: number;
  /** Entries a directory walk visits before it stops. */
  maxWalkEntries: number;
}

export const DEFAULT_TOOL_LIMITS: ToolLimits = {
  outputChars: 30_000,
  commandTimeoutMs: 2 * 60_000,
  maxCommandTimeoutMs: 10 * 60_000,
  maxFileBytes: 5 * 1024 * 1024,
  maxWalkEntries: 20_000,
};

const SKIPPED_DIRS = new Set([".git", "node_modules"]);

export class ToolError extends Error {}

/** The text the model sees for a tool result; also used to rebuild history from the transcript. */
export function formatForModel(result: Partial<ToolOutput>): string {
  const parts: string[] = [];
  if (result.exit_code !== undefined) {
    parts.push(
      result.timed_out
        ? "[timed out and was killed]"
        : `[exit code ${result.exit_code === null ? "none (killed by a signal)" : result.exit_code}]`,
    );
  }
  parts.push(String(result.output ?? ""));
  return parts.join("\n");
}

/** Cuts text to `limit` characters, keeping the head, and says so. */
export function capText(text: string, limit: number, hint = ""): { text: string; truncated: boolean } {
  if (text.length <= limit) return { text, truncated: false };
  return {
    text: `${text.slice(0, limit)}\n[output truncated: showed ${limit} of ${text.length} characters${hint ? `; ${hint}` : ""}]`,
    truncated: true,
  };
}

export interface ToolContext {
  sandbox: Sandbox;
  signal: AbortSignal;
  limits?: Partial<ToolLimits>;
}

export function createTools(ctx: ToolContext): ToolSet {
  const limits = { ...DEFAULT_TOOL_LIMITS, ...ctx.limits };
  const { sandbox } = ctx;
  const display = (abs: string) => relative(sandbox.workspace, abs) || ".";
  const resolve = async (path: string) => {
    try {
      return await sandbox.resolvePath(path);
    } catch (err) {
      throw new ToolError((err as Error).message);
    }
  };

  return {
    shell: define({
      description:
        "Run a shell command with bash -c in the workspace (the current directory). Returns the exit code and " +
        `the combined stdout/stderr (the last ${limits.outputChars} characters when longer). No network. ` +
        `Default timeout ${limits.commandTimeoutMs / 1000} s; pass timeout_seconds for longer commands ` +
        `(at most ${limits.maxCommandTimeoutMs / 1000} s).`,
      schema: {
        type: "object",
        properties: {
          command: { type: "string", description: "The command line to run." },
          timeout_seconds: { type: "number", description: "Kill the command after this many seconds." },
        },
        required: ["command"],
        additionalProperties: false,
      },
      execute: async (input: { command: string; timeout_seconds?: number }) => {
        if (typeof input.command !== "string" || input.command.trim() === "") {
          throw new ToolError("command must be a non-empty string");
        }
        const timeoutMs = Math.min(
          input.timeout_seconds && input.timeout_seconds > 0
            ? input.timeout_seconds * 1000
            : limits.commandTimeoutMs,
          limits.maxCommandTimeoutMs,
        );
        const result = await sandbox.exec(input.command, {
          timeoutMs,
          signal: ctx.signal,
          outputLimit: limits.outputChars,
        });
        const truncated = result.truncated;
        const output = truncated
          ? `[output truncated: only the last ${limits.outputChars} bytes are shown]\n${result.output}`
          : result.output;
        return {
          output,
          exit_code: result.exitCode,
          ...(truncated ? { truncated } : {}),
          ...(result.timedOut ? { timed_out: true } : {}),
        };
      },
    }),

    read_file: define({
      description:
        "Read a text file in the workspace. Returns its lines prefixed with line numbers; use offset/limit " +
        "(1-based line numbers) for large files.",
      schema: {
        type: "object",
        properties: {
          path: { type: "string", description: "Path relative to the workspace." },
          offset: { type: "integer", description: "First line to return (1-based)." },
          limit: { type: "integer", description: "Number of lines to return (default 2000)." },
        },
        required: ["path"],
        additionalProperties: false,
      },
      execute: async (input: { path: string; offset?: number; limit?: number }) => {
        const abs = await resolve(input.path);
        const info = await stat(abs).catch(() => undefined);
        if (!info) throw new ToolError(`${input.path} does not exist`);
        if (info.isDirectory()) throw new ToolError(`${input.path} is a directory: use list_files`);
        if (info.size > limits.maxFileBytes) {
          throw new ToolError(
            `${input.path} is ${info.size} bytes, more than read_file reads (${limits.maxFileBytes}); use shell (head, sed -n) instead`,
          );
        }
        const buf = await readFile(abs);
        if (buf.includes(0)) throw new ToolError(`${input.path} looks like a binary file`);
        const lines = buf.toString("utf8").split("\n");
        if (lines.at(-1) === "") lines.pop();
        const start = Math.max(1, Math.floor(input.offset ?? 1));
        const count = Math.max(1, Math.floor(input.limit ?? 2000));
        const slice = lines.slice(start - 1, start - 1 + count);
        const width = String(start + slice.length).length;
        let text = slice.map((l, i) => `${String(start + i).padStart(width)}\t${l}`).join("\n");
        let truncated = false;
        if (start - 1 + slice.length < lines.length) {
          truncated = true;
          text += `\n[showing lines ${start}-${start + slice.length - 1} of ${lines.length}; read on with offset ${start + slice.length}]`;
        }
        if (lines.length === 0) text = "(empty file)";
        const capped = capText(text, limits.outputChars, "use offset and limit to read parts");
        return { output: capped.text, ...(truncated || capped.truncated ? { truncated: true } : {}) };
      },
    }),

    write_file: define({
      description:
        "Create or overwrite a file in the workspace with the given content (parent directories are created).",
      schema: {
        type: "object",
        properties: {
          path: { type: "string", description: "Path relative to the workspace." },
          content: { type: "string", description: "The whole new content of the file." },
        },
        required: ["path", "content"],
        additionalProperties: false,
      },
      execute: async (input: { path: string; content: string }) => {
        if (typeof input.content !== "string") throw new ToolError("content must be a string");
        const abs = await resolve(input.path);
        await mkdir(dirname(abs), { recursive: true });
        // mkdir may have followed a symlinked directory: check again before writing.
        const checked = await resolve(input.path);
        await writeFile(checked, input.content);
        return { output: `wrote ${Buffer.byteLength(input.content)} bytes to ${display(checked)}` };
      },
    }),

    edit_file: define({
      description:
        "Edit a file by exact string replacement: old_string must occur exactly once in the file (include " +
        "enough surrounding context to make it unique) unless replace_all is true.",
      schema: {
        type: "object",
        properties: {
          path: { type: "string", description: "Path relative to the workspace." },
          old_string: { type: "string", description: "The exact text to replace." },
          new_string: { type: "string", description: "The replacement text." },
          replace_all: { type: "boolean", description: "Replace every occurrence." },
        },
        required: ["path", "old_string", "new_string"],
        additionalProperties: false,
      },
      execute: async (input: {
        path: string;
        old_string: string;
        new_string: string;
        replace_all?: boolean;
      }) => {
        if (typeof input.old_string !== "string" || input.old_string === "") {
          throw new ToolError("old_string must be a non-empty string (use write_file to create a file)");
        }
        if (typeof input.new_string !== "string") throw new ToolError("new_string must be a string");
        const abs = await resolve(input.path);
        const text = await readFile(abs, "utf8").catch(() => {
          throw new ToolError(`${input.path} does not exist or cannot be read`);
        });
        const count = text.split(input.old_string).length - 1;
        if (count === 0) throw new ToolError(`old_string was not found in ${input.path}; nothing changed`);
        if (count > 1 && !input.replace_all) {
          throw new ToolError(
            `old_string occurs ${count} times in ${input.path}; add surrounding context to make it unique, or set replace_all; nothing changed`,
          );
        }
        const updated = input.replace_all
          ? text.split(input.old_string).join(input.new_string)
          : text.replace(input.old_string, () => input.new_string);
        await writeFile(abs, updated);
        return {
          output: `replaced ${input.replace_all ? count : 1} occurrence${count > 1 && input.replace_all ? "s" : ""} in ${display(abs)}`,
        };
      },
    }),

    list_files: define({
      description:
        "List files under a directory of the workspace, recursively (skipping .git and node_modules), " +
        'optionally filtered by a glob such as "src/**/*.ts" or "*.md" (matched against paths relative to the workspace).',
      schema: {
        type: "object",
        properties: {
          path: { type: "string", description: "Directory to list (default: the workspace)." },
          pattern: { type: "string", description: "Glob filter, e.g. **/*.py" },
        },
        additionalProperties: false,
      },
      execute: async (input: { path?: string; pattern?: string }) => {
        const root = await resolve(input.path ?? ".");
        const matcher = input.pattern ? globToRegExp(input.pattern) : undefined;
        const found: string[] = [];
        const walk = await walkFiles(root, limits.maxWalkEntries, ctx.signal, (abs, isDir) => {
          const rel = display(abs);
          if (matcher && !matcher.test(rel) && !matcher.test(rel.split(sep).at(-1) ?? rel)) return;
          found.push(isDir ? `${rel}/` : rel);
        });
        found.sort();
        let text = found.length ? found.join("\n") : "(no matching files)";
        if (walk.stopped)
          text += `\n[stopped after visiting ${limits.maxWalkEntries} entries: narrow the path]`;
        const capped = capText(text, limits.outputChars, "narrow the path or pattern");
        return {
          output: capped.text,
          ...(capped.truncated || walk.stopped ? { truncated: true } : {}),
        };
      },
    }),

    search_files: define({
      description:
        "Search the contents of files in the workspace for a regular expression (JavaScript syntax), like grep -rn. " +
        "Returns path:line: text for each matching line (skipping .git, node_modules and binary files).",
      schema: {
        type: "object",
        properties: {
          pattern: { type: "string", description: "Regular expression to look for." },
          path: { type: "string", description: "Directory or file to search (default: the workspace)." },
          glob: { type: "string", description: "Only files whose path matches this glob, e.g. **/*.ts" },
          ignore_case: { type: "boolean" },
        },
        required: ["pattern"],
        additionalProperties: false,
      },
      execute: async (input: { pattern: string; path?: string; glob?: string; ignore_case?: boolean }) => {
        let regex: RegExp;
        try {
          regex = new RegExp(input.pattern, input.ignore_case ? "i" : "");
        } catch (err) {
          throw new ToolError(`invalid regular expression: ${(err as Error).message}`);
        }
        const root = await resolve(input.path ?? ".");
        const matcher = input.glob ? globToRegExp(input.glob) : undefined;
        const files: string[] = [];
        const info = await lstat(root).catch(() => undefined);
        if (!info) throw new ToolError(`${input.path} does not exist`);
        let stopped = false;
        if (info.isFile()) files.push(root);
        else {
          const walk = await walkFiles(root, limits.maxWalkEntries, ctx.signal, (abs, isDir) => {
            if (isDir) return;
            const rel = display(abs);
            if (matcher && !matcher.test(rel) && !matcher.test(rel.split(sep).at(-1) ?? rel)) return;
            files.push(abs);
          });
          stopped = walk.stopped;
        }
        files.sort();
        const hits: string[] = [];
        let size = 0;
        let truncated = stopped;
        for (const file of files) {
          if (ctx.signal.aborted || size > limits.outputChars) break;
          const fi = await lstat(file).catch(() => undefined);
          if (!fi?.isFile() || fi.size > limits.maxFileBytes) continue;
          const buf = await readFile(file).catch(() => undefined);
          if (!buf || buf.includes(0)) continue;
          const lines = buf.toString("utf8").split("\n");
          for (let i = 0; i < lines.length; i++) {
            if (!regex.test(lines[i]!)) continue;
            const line = lines[i]!.length > 500 ? `${lines[i]!.slice(0, 500)}…` : lines[i]!;
            const hit = `${display(file)}:${i + 1}: ${line}`;
            size += hit.length + 1;
            if (size > limits.outputChars) {
              truncated = true;
              break;
            }
            hits.push(hit);
          }
        }
        let text = hits.length ? hits.join("\n") : "(no matches)";
        if (truncated) text += "\n[results truncated: narrow the pattern, path or glob]";
        return { output: text, ...(truncated ? { truncated: true } : {}) };
      },
    }),
  };
}

/** A tool whose failures become an `error` result the model can read, never an exception. */
function define<I>(spec: {
  description: string;
  schema: Record<string, unknown>;
  execute: (input: I) => Promise<ToolOutput>;
}) {
  return tool({
    description: spec.description,
    inputSchema: jsonSchema<I>(spec.schema as Parameters<typeof jsonSchema>[0]),
    execute: async (input: I): Promise<ToolOutput> => {
      try {
        return await spec.execute(input);
      } catch (err) {
        const message =
          err instanceof ToolError ? err.message : `failed: ${(err as Error).message ?? String(err)}`;
        return { output: `error: ${message}`, error: true };
      }
    },
    toModelOutput: ({ output }) => ({ type: "text", value: formatForModel(output as ToolOutput) }),
  });
}

/** Visits files and directories under `root` without following symlinks. */
async function walkFiles(
  root: string,
  maxEntries: number,
  signal: AbortSignal,
  visit: (abs: string, isDir: boolean) => void,
): Promise<{ stopped: boolean }> {
  let seen = 0;
  const queue = [root];
  while (queue.length) {
    const dir = queue.shift()!;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => {
      if (dir === root) throw new ToolError(`${root} is not a readable directory`);
      return [];
    });
    for (const entry of entries) {
      if (signal.aborted || ++seen > maxEntries) return { stopped: !signal.aborted };
      const abs = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (SKIPPED_DIRS.has(entry.name)) continue;
        visit(abs, true);
        queue.push(abs);
      } else if (entry.isFile() || entry.isSymbolicLink()) {
        visit(abs, false);
      }
    }
  }
  return { stopped: false };
}

/** Glob → RegExp: `**` any depth, `*` within a segment, `?` one character, `{a,b}` alternatives. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slash = glob[i + 2] === "/";
        re += slash ? "(?:.*/)?" : ".*";
        i += slash ? 2 : 1;
      } else re += "[^/]*";
    } else if (c === "?") re += "[^/]";
    else if (c === "{") {
      const end = glob.indexOf("}", i);
      if (end === -1) re += "\\{";
      else {
        re += `(?:${glob
          .slice(i + 1, end)
          .split(",")
          .map((s) => s.replace(/[.+^${}()|[\]\\*?]/g, "\\$&"))
          .join("|")})`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}
