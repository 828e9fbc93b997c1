import type { Stats } from "node:fs";
import { lstat, mkdir, readdir, rename, rm, rmdir, symlink } from "node:fs/promises";
import { isAbsolute, join, posix } from "node:path";
import type { ReadEntry } from "tar";
import { measureDiskUsage } from "./disk-quota.ts";
import { gnuTar, type Packed, packListed } from "./gnu-tar.ts";
import { listTree, type TreeListing } from "./tree-listing.ts";

/**
 * A run's directories as one gzip'd tar, and back (docs/runtime.md#checkpoints). The directories are
 * siblings in one parent (a workspace and its `.agent` area), archived under their own names, by GNU tar
 * from a listing (tree-listing.ts) where it is installed, else (and for a small listing) by node-tar. What an
 * agent made is data: a snapshot never follows a symlink (it is kept as a symlink), keeps only files,
 * directories and symlinks (no devices, FIFOs or sockets), and a restore never writes through one.
 */

/** The most a snapshot holds (measured on disk) and weighs (compressed), whatever the quota: a store row. */
export const MAX_SNAPSHOT_BYTES = 512 * 2 ** 20;
/** Fast compression: a checkpoint is taken after every step, and most of a workspace compresses well anyway. */
const GZIP_LEVEL = 1;
/**
 * A listing this small is archived by node-tar in this process: starting GNU tar would cost more (a fork
 * of Dispatch on its event loop, ≈ 5 ms under load) than node-tar spends on a few dozen entries.
 */
const IN_PROCESS_ENTRIES = 64;
const IN_PROCESS_BYTES = 4 * 2 ** 20;
/** Where an archive is unpacked before its directories are moved into place: next to them, same disk. */
export const RESTORING_SUFFIX = ".restoring";

export type Snapshot =
  | { ok: true; archive: Buffer; bytesOnDisk: number }
  | { ok: false; reason: string; bytesOnDisk?: number };

/**
 * Archives `names` (those that exist) of `root`, or refuses when they hold more than `limitBytes` on disk
 * or their archive weighs more (so a checkpoint never fills the store), saying so.
 */
export async function snapshotDirectories(opts: {
  root: string;
  names: readonly string[];
  limitBytes: number;
  /** listTree of the same names, just taken: spares listing and measuring them again. */
  listing?: TreeListing;
}): Promise<Snapshot> {
  const limit = Math.min(opts.limitBytes, MAX_SNAPSHOT_BYTES);
  // A complete listing has every directory read, what they hold counted and which of the names exist.
  const listed = opts.listing?.complete ? opts.listing : undefined;
  const present: string[] = [];
  for (const name of opts.names) {
    if (listed) {
      if (listed.paths.includes(name)) present.push(name);
      continue;
    }
    const st = await lstat(join(opts.root, name)).catch(() => undefined);
    if (st?.isDirectory()) present.push(name);
  }
  const usage = listed
    ? { bytes: listed.bytes, over: listed.bytes > limit }
    : await measureDiskUsage(
        present.map((name) => join(opts.root, name)),
        limit,
      );
  if (usage.over) {
    return {
      ok: false,
      reason: `it holds at least ${mebibytes(usage.bytes)} MB on disk, over the ${mebibytes(limit)} MB a checkpoint may hold`,
      bytesOnDisk: usage.bytes,
    };
  }
  // Nothing to keep: an empty archive, which a restore reads as nothing to restore.
  if (present.length === 0) return { ok: true, archive: Buffer.alloc(0), bytesOnDisk: 0 };
  const gnu = await gnuTar();
  // An incomplete listing missed what an unreadable directory held: listed again, now that the measurement
  // above made it readable.
  const paths = listed?.paths ?? (gnu ? (await listTree(opts.root, present)).paths : undefined);
  const read =
    paths && paths.length <= IN_PROCESS_ENTRIES && usage.bytes <= IN_PROCESS_BYTES
      ? await packWithNodeTar(opts.root, paths, limit, { recurse: false })
      : gnu && paths
        ? await packListed({ tar: gnu, root: opts.root, paths, level: GZIP_LEVEL, limit })
        : await packWithNodeTar(opts.root, present, limit, { recurse: true });
  if (!Buffer.isBuffer(read)) {
    return {
      ok: false,
      reason:
        "over" in read
          ? `its archive weighs more than the ${mebibytes(limit)} MB a checkpoint may weigh`
          : `a file changed while it was read (${read.changed}); the next checkpoint tries again`,
      bytesOnDisk: usage.bytes,
    };
  }
  return { ok: true, archive: read, bytesOnDisk: usage.bytes };
}

/**
 * node-tar's archive of `paths`: the listed entries only (`recurse: false`), or their whole trees (where
 * GNU tar is not installed and nothing was listed). node-tar is imported by the first archive or restore,
 * not at start-up (bench/README.md, "Fourth round: idle memory").
 */
async function packWithNodeTar(
  root: string,
  paths: readonly string[],
  limit: number,
  opts: { recurse: boolean },
): Promise<Packed> {
  const tar = await import("tar");
  const pack = tar.c(
    {
      cwd: root,
      gzip: { level: GZIP_LEVEL },
      follow: false,
      noDirRecurse: !opts.recurse,
      // Hard links are stored as links (tar's own check keeps them inside the archive on restore).
      filter: (_path: string, entry) => {
        const st = entry as Stats;
        return st.isFile() || st.isDirectory() || st.isSymbolicLink();
      },
    },
    [...paths],
  );
  // Read by events, with an error listener for the whole life of the stream: the agent may remove or
  // rewrite a file while it is read (its session files, lock files), and tar reports that as an error at
  // any moment, which must end this snapshot (the next step's checkpoint tries again), never the process.
  return new Promise<Packed>((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (value: Packed) => {
      if (settled) return;
      settled = true;
      resolve(value);
    };
    pack.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        settle({ over: true });
        pack.destroy(); // stops reading the rest (and closes the files it had open)
        return;
      }
      chunks.push(chunk);
    });
    pack.on("end", () => settle(Buffer.concat(chunks)));
    pack.on("error", (err: unknown) =>
      settle({ changed: (err as NodeJS.ErrnoException).code ?? String(err) }),
    );
  });
}

/**
 * Unpacks `archive` into `root`: each of `names` the archive holds becomes that directory, which must be
 * absent or empty. Files keep their modes, empty directories are there, symlinks point where they did.
 * Refused whole (nothing restored, nothing left behind) when one of them is not empty, or when an entry
 * is not one a snapshot makes: a path outside `names`, `..`, an absolute path, a write through a symlink,
 * a device or FIFO, more than `limitBytes` in all.
 */
export async function restoreDirectories(opts: {
  root: string;
  names: readonly string[];
  archive: Uint8Array;
  limitBytes: number;
}): Promise<{ ok: true; restored: string[] } | { ok: false; reason: string }> {
  for (const name of opts.names) {
    if (!(await isEmptyOrAbsent(join(opts.root, name)))) {
      return { ok: false, reason: `${name} is not empty: a checkpoint is restored only into an empty one` };
    }
  }
  if (opts.archive.byteLength === 0) return { ok: true, restored: [] };
  const staging = join(opts.root, `${opts.names[0]}${RESTORING_SUFFIX}`);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { mode: 0o700 });
  try {
    const unpacked = await unpack(staging, opts);
    if (!unpacked.ok) return unpacked;
    const restored: string[] = [];
    for (const name of opts.names) {
      const from = join(staging, name);
      if (!(await lstat(from).catch(() => undefined))?.isDirectory()) continue;
      const to = join(opts.root, name);
      await rmdir(to).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT") throw err;
      });
      await rename(from, to);
      restored.push(name);
    }
    return { ok: true, restored };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

type Unpacked = { ok: true } | { ok: false; reason: string };

async function unpack(
  staging: string,
  opts: { names: readonly string[]; archive: Uint8Array; limitBytes: number },
): Promise<Unpacked> {
  const limit = Math.min(opts.limitBytes, MAX_SNAPSHOT_BYTES);
  // Symlinks are made last, once every file and directory is written: nothing is written after them,
  // so none can redirect a write, and the targets stay exactly as the agent made them.
  const symlinks: Array<{ path: string; target: string }> = [];
  let refused: string | undefined;
  let bytes = 0;
  const inside = (path: string) => {
    const normal = posix.normalize(path);
    if (isAbsolute(normal) || normal.split("/").includes("..")) return false;
    return opts.names.some((name) => normal === name || normal.startsWith(`${name}/`));
  };
  const tar = await import("tar");
  const unpacker = tar.x({
    cwd: staging,
    strict: true,
    preserveOwner: false,
    chmod: true,
    processUmask: 0,
    // The archive's size is bounded below by what its entries declare, not by a ratio.
    maxDecompressionRatio: Number.POSITIVE_INFINITY,
    filter: (path: string, entry) => {
      const e = entry as ReadEntry;
      if (refused) return false;
      if (!inside(path) || (e.type === "Link" && !inside(String(e.linkpath)))) {
        refused = `it holds ${JSON.stringify(path)}, outside the directories it restores`;
        return false;
      }
      if (e.type === "SymbolicLink") {
        symlinks.push({ path: posix.normalize(path), target: String(e.linkpath) });
        return false;
      }
      if (!["File", "OldFile", "ContiguousFile", "Directory", "Link"].includes(e.type)) {
        refused = `it holds ${JSON.stringify(path)}, a ${e.type}, which a snapshot never stores`;
        return false;
      }
      bytes += e.size;
      if (bytes > limit) refused = `it unpacks to more than ${mebibytes(limit)} MB`;
      return !refused;
    },
  });
  try {
    await new Promise<void>((resolve, reject) => {
      unpacker.on("error", reject);
      unpacker.on("close", () => resolve());
      unpacker.end(Buffer.from(opts.archive.buffer, opts.archive.byteOffset, opts.archive.byteLength));
    });
  } catch (err) {
    return {
      ok: false,
      reason: `it could not be unpacked: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (refused) return { ok: false, reason: refused };
  for (const link of symlinks) {
    if (!(await realDirectories(staging, posix.dirname(link.path)))) {
      return { ok: false, reason: `its symlink ${JSON.stringify(link.path)} lies under another symlink` };
    }
    try {
      await symlink(link.target, join(staging, link.path));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      return { ok: false, reason: `it holds ${JSON.stringify(link.path)} twice` };
    }
  }
  return { ok: true };
}

/** Whether every component of `dir` under `root` is a directory, not a symlink (nor missing). */
async function realDirectories(root: string, dir: string): Promise<boolean> {
  let path = root;
  for (const part of dir.split("/")) {
    if (part === "" || part === ".") continue;
    path = join(path, part);
    const st = await lstat(path).catch(() => undefined);
    if (!st?.isDirectory()) return false;
  }
  return true;
}

/** Whole MB, rounded down. */
function mebibytes(bytes: number): number {
  return Math.floor(bytes / 2 ** 20);
}

async function isEmptyOrAbsent(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw err;
  }
}
