import { createHash } from "node:crypto";
import type { Stats } from "node:fs";
import { lstat, opendir } from "node:fs/promises";
import { join } from "node:path";

/**
 * What a checkpoint would archive of a run's directories (checkpoint-archive.ts), and whether anything in
 * them changed since an earlier listing: every directory, file and symlink under them (never following a
 * symlink, leaving out devices, FIFOs and sockets), with a digest of every path with its type and mode, and
 * of each file's and symlink's size, inode, link count, mtime and ctime. A write or chmod changes a file's
 * ctime, a new, removed or renamed entry changes the paths: an equal digest means nothing a snapshot holds
 * changed — unless a file changed within the file system's timestamp granularity of the listing:
 * `settled` is false while any file changed in the last RACY_MS, and an unsettled digest must not stand
 * for its tree later (git's "racy clean" rule). The same walk counts what the listed entries hold on disk,
 * as disk-quota.ts's measureDiskUsage counts it, so a snapshot of a complete listing needs no second walk.
 */

/** An entry changed this recently may change again without its timestamps moving. */
export const RACY_MS = 2000;

export interface TreeListing {
  /** Paths relative to the root, each directory before what it holds. */
  paths: string[];
  digest: string;
  /** Nothing changed within RACY_MS of the listing, and every directory could be read. */
  settled: boolean;
  /** Every directory could be read: `paths` is all there is. */
  complete: boolean;
  /** Bytes allocated to the listed entries (`st_blocks` × 512, a hard-linked file once). */
  bytes: number;
}

/** Entries lstat'ed at once. */
const CONCURRENCY = 32;

/** `leaveOut`: paths relative to `root` whose entries (and what they hold) neither count nor are listed. */
export async function listTree(
  root: string,
  names: readonly string[],
  leaveOut: readonly string[] = [],
): Promise<TreeListing> {
  const startedMs = Date.now();
  const hash = createHash("sha256");
  const paths: string[] = [];
  let settled = true;
  let complete = true;
  let bytes = 0;
  const linked = new Set<string>();
  const record = (path: string, st: Stats): boolean => {
    if (leaveOut.includes(path)) return false;
    const kind = st.isDirectory() ? "d" : st.isFile() ? "f" : st.isSymbolicLink() ? "l" : undefined;
    if (!kind) return false;
    paths.push(path);
    const inode = kind !== "d" && st.nlink > 1 ? `${st.dev}:${st.ino}` : undefined;
    if (!inode || !linked.has(inode)) bytes += st.blocks * 512;
    if (inode) linked.add(inode);
    if (kind === "d") {
      // What a directory holds is listed itself: its own times only say that it changed.
      hash.update(`${path}\0d${st.mode}\n`);
      return true;
    }
    hash.update(`${path}\0${kind}${st.mode}:${st.size}:${st.ino}:${st.mtimeMs}:${st.ctimeMs}:${st.nlink}\n`);
    if (Math.max(st.mtimeMs, st.ctimeMs) > startedMs - RACY_MS) settled = false;
    return false;
  };
  const dirs: string[] = [];
  for (const name of names) {
    const st = await lstat(join(root, name)).catch(() => undefined);
    if (st?.isDirectory() && record(name, st)) dirs.push(name);
  }
  for (let d = 0; d < dirs.length; d++) {
    const dir = dirs[d]!;
    let opened: Awaited<ReturnType<typeof opendir>>;
    try {
      opened = await opendir(join(root, dir), { bufferSize: CONCURRENCY });
    } catch {
      // Unreadable or gone: its contents are unknown, so this listing stands for nothing later.
      settled = false;
      complete = false;
      hash.update(`${dir}\0unreadable\n`);
      continue;
    }
    const names: string[] = [];
    for await (const entry of opened) names.push(entry.name);
    names.sort();
    for (let i = 0; i < names.length; i += CONCURRENCY) {
      const batch = names.slice(i, i + CONCURRENCY).map((n) => `${dir}/${n}`);
      const stats = await Promise.all(batch.map((p) => lstat(join(root, p)).catch(() => undefined)));
      stats.forEach((st, k) => {
        if (!st) {
          settled = false; // vanished while listed
          return;
        }
        if (record(batch[k]!, st)) dirs.push(batch[k]!);
      });
    }
  }
  return { paths, digest: hash.digest("hex"), settled, complete, bytes };
}
