import type { Sandbox } from "../../../sandbox/sandbox.ts";
import { ToolError } from "./define-tool.ts";
import { parseTar } from "./tar-entries.ts";

/** An entry of a directory walk; `size` in bytes (of the link itself for a symlink). */
export interface WalkEntry {
  abs: string;
  type: "dir" | "file" | "symlink";
  size: number;
}

export type ReadResult =
  | { kind: "file"; data: Buffer }
  | { kind: "missing" }
  | { kind: "directory" }
  | { kind: "not_regular" }
  | { kind: "too_large"; size: number };

const READ_SCRIPT = `p=$1
if [ -d "$p" ]; then exit 4; fi
if [ ! -e "$p" ]; then exit 3; fi
if [ ! -f "$p" ]; then exit 6; fi
size=$(stat -L -c %s -- "$p") || exit 3
if [ "$size" -gt "$2" ]; then printf %s "$size"; exit 5; fi
exec head -c "$(($2 + 1))" -- "$p"`;

const WRITE_SCRIPT = `mkdir -p -- "$(dirname -- "$1")" && exec cat > "$1"`;

// Symlinks are listed, never followed (-P below the root); .git and node_modules are not entered.
const WALK_SCRIPT = `if [ -d "$1" ]; then
  exec find -H "$1" -mindepth 1 \\( -type d \\( -name .git -o -name node_modules \\) -prune \\) -o \\( -type d -o -type f -o -type l \\) -printf '%y %s %p\\0'
elif [ -f "$1" ] && [ "$2" = file ]; then
  exec find -H "$1" -maxdepth 0 -printf 'f %s %p\\0'
elif [ -e "$1" ]; then exit 4
else exit 3; fi`;

/** Regular files named on stdin (NUL-separated) as a tar stream: links stay links, nothing is followed. */
const ARCHIVE_SCRIPT =
  "exec tar --format=gnu --null --no-recursion --ignore-failed-read -T - -cf - 2>/dev/null";

/**
 * The file tools' reads, writes and walks, each done by a process in the run's sandbox rather than by
 * Dispatch: a path that is (or becomes, in a race with the agent's own processes) a symlink resolves in
 * the sandbox's view of the filesystem, where Dispatch's data, secrets and the host's writable files are
 * not. Paths are absolute paths inside the workspace, checked by the caller first for clear errors.
 */
export class SandboxFiles {
  private readonly sandbox: Sandbox;
  private readonly signal: AbortSignal;

  constructor(sandbox: Sandbox, signal: AbortSignal) {
    this.sandbox = sandbox;
    this.signal = signal;
  }

  /** A regular file's content when it is at most `maxBytes` long. */
  async read(abs: string, maxBytes: number): Promise<ReadResult> {
    const run = await this.run(["bash", "-c", READ_SCRIPT, "read", abs, String(maxBytes)], {
      maxOutput: maxBytes + 1,
    });
    // The file may have grown after its size was checked: reading stopped one byte past the limit.
    if (run.stdout.length > maxBytes) return { kind: "too_large", size: run.stdout.length };
    switch (run.code) {
      case 0:
        return { kind: "file", data: run.stdout };
      case 3:
        return { kind: "missing" };
      case 4:
        return { kind: "directory" };
      case 5:
        return { kind: "too_large", size: Number(run.stdout.toString()) };
      case 6:
        return { kind: "not_regular" };
      default:
        throw run.failure("read");
    }
  }

  /** Creates or replaces a file, with its parent directories. */
  async write(abs: string, content: string): Promise<void> {
    const run = await this.run(["bash", "-c", WRITE_SCRIPT, "write", abs], { input: content });
    if (run.code !== 0) throw run.failure("write");
  }

  /**
   * The entries below directory `root` (or `root` itself when it is a regular file and `fileRoot`), at
   * most `maxEntries`; `stopped` when there were more.
   */
  async walk(
    root: string,
    maxEntries: number,
    opts: { fileRoot?: boolean } = {},
  ): Promise<{ entries: WalkEntry[]; stopped: boolean } | { problem: "missing" | "not_directory" }> {
    const entries: WalkEntry[] = [];
    let stopped = false;
    let pending: Buffer = Buffer.alloc(0);
    const run = await this.run(["bash", "-c", WALK_SCRIPT, "walk", root, opts.fileRoot ? "file" : ""], {
      onStdout: (chunk, stop) => {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        for (let end = pending.indexOf(0); end !== -1; end = pending.indexOf(0)) {
          const record = pending.subarray(0, end).toString("utf8");
          pending = pending.subarray(end + 1);
          if (entries.length >= maxEntries) {
            stopped = true;
            stop();
            return;
          }
          const [type, size, ...path] = record.split(" ");
          entries.push({
            abs: path.join(" "),
            type: type === "d" ? "dir" : type === "l" ? "symlink" : "file",
            size: Number(size),
          });
        }
      },
    });
    if (run.code === 3) return { problem: "missing" };
    if (run.code === 4) return { problem: "not_directory" };
    // find says 1 when an entry vanished while it walked (the agent's processes keep working): what it
    // listed still stands.
    if (run.code !== 0 && run.code !== 1 && !stopped && !this.signal.aborted) throw run.failure("list");
    return { entries, stopped };
  }

  /**
   * Calls `visit` with the content of each of `files` that is still a regular file of at most `maxBytes`,
   * in order, until it returns false. A file that changed into something else meanwhile is skipped.
   */
  async readEach(
    files: string[],
    maxBytes: number,
    visit: (abs: string, data: Buffer) => boolean,
  ): Promise<void> {
    if (files.length === 0) return;
    // tar names members without the leading "/".
    const parser = parseTar((name, data) => visit(`/${name}`, data), maxBytes);
    await this.run(["bash", "-c", ARCHIVE_SCRIPT], {
      input: `${files.join("\0")}\0`,
      onStdout: (chunk, stop) => {
        if (!parser.push(chunk)) stop();
      },
    });
  }

  private async run(
    argv: string[],
    opts: { input?: string; maxOutput?: number; onStdout?: (chunk: Buffer, stop: () => void) => void },
  ) {
    if (this.signal.aborted) throw new ToolError("the run was stopped");
    const proc = this.sandbox.start(argv, { signal: this.signal });
    const stdout: Buffer[] = [];
    let size = 0;
    let stderr = "";
    const stop = () => void proc.stop();
    proc.child.stdout.on("data", (chunk: Buffer) => {
      if (opts.onStdout) return opts.onStdout(chunk, stop);
      if (size > (opts.maxOutput ?? Number.POSITIVE_INFINITY)) return stop();
      stdout.push(chunk);
      size += chunk.length;
    });
    proc.child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 4000) stderr += chunk.toString("utf8");
    });
    proc.child.stdin.end(opts.input ?? "");
    const exit = await proc.exited;
    return {
      code: exit.code,
      stdout: Buffer.concat(stdout),
      failure: (what: string) =>
        new ToolError(
          `could not ${what} the file: ${
            exit.error?.message ??
            (stderr.trim().split("\n").at(-1) || `exit status ${exit.code ?? exit.signal}`)
          }`,
        ),
    };
  }
}
