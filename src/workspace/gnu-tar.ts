import { execFile, spawn } from "node:child_process";
import { createGzip } from "node:zlib";

/**
 * GNU tar, when the machine has it: it archives a listed tree several times faster than node-tar
 * (bench/README.md, "Third round: run start and checkpoints"). Its archive is in GNU's format (long names
 * as GNU long-name entries, no per-file pax header: a third of the size of a pax archive once gzip'd),
 * which the restore reads with node-tar and its checks, like any other.
 */

let found: Promise<string | undefined> | undefined;

/** `tar` when it is GNU tar (looked up once), else undefined. */
export function gnuTar(): Promise<string | undefined> {
  found ??= new Promise((resolve) => {
    execFile("tar", ["--version"], { timeout: 10_000 }, (err, stdout) =>
      resolve(!err && /GNU tar/.test(stdout) ? "tar" : undefined),
    );
  });
  return found;
}

export type Packed = Buffer | { over: true } | { changed: string };

/**
 * `paths` of `root` exactly as listed (no recursion, no symlink followed), gzip'd at `level`; stops once the
 * archive weighs more than `limit`. A path that changed or vanished while read fails it (`changed`).
 */
export function packListed(opts: {
  tar: string;
  root: string;
  paths: readonly string[];
  level: number;
  limit: number;
}): Promise<Packed> {
  return new Promise((resolve) => {
    const child = spawn(
      opts.tar,
      [
        "--create",
        "--file=-",
        "--format=gnu",
        "--numeric-owner",
        "--no-recursion",
        "--null",
        "--verbatim-files-from",
        `--directory=${opts.root}`,
        "--files-from=-",
      ],
      { env: { PATH: "/usr/bin:/bin", LANG: "C" }, stdio: ["pipe", "pipe", "pipe"] },
    );
    const gzip = createGzip({ level: opts.level });
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    let stderr = "";
    const settle = (value: Packed) => {
      if (settled) return;
      settled = true;
      resolve(value);
    };
    child.stdin.on("error", () => {}); // tar that stopped early: its exit says why
    child.stdin.end(opts.paths.map((p) => `${p}\0`).join(""));
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (c: string) => {
      stderr = (stderr + c).slice(-1000);
    });
    child.stdout.pipe(gzip);
    gzip.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > opts.limit) {
        settle({ over: true });
        child.kill("SIGKILL");
        gzip.destroy();
        return;
      }
      chunks.push(chunk);
    });
    const exited = new Promise<number | null>((done) => child.once("close", done));
    const ended = new Promise<void>((done) => gzip.once("end", done));
    child.once("error", (err) => settle({ changed: err.message }));
    void Promise.all([exited, ended]).then(([code]) => {
      if (code !== 0) settle({ changed: stderr.trim().split("\n").at(-1) || `tar exited with ${code}` });
      else settle(Buffer.concat(chunks));
    });
  });
}
