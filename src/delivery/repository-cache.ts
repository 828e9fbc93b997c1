import { existsSync } from "node:fs";
import { copyFile, link, mkdir, readdir, utimes } from "node:fs/promises";
import { join } from "node:path";
import { type HostGitResult, hostGit, reason, text } from "./host-git.ts";

/**
 * The worker's copy of a repository's objects (docs/delivery.md, "Checkout"), shared by the private
 * mirrors of every run in that repository: what the remote listed for a run is fetched into it only when
 * it does not already hold exactly that commit, and a run's mirror gets its objects as hard links of the
 * cache's packs (immutable files; the mirror never lets the agent see them, the workspace gets a copy).
 * So the second run in a repository fetches nothing but the list of its branches.
 *
 * Every fetch into the cache keeps its pack (no loose objects), and a repack it triggers runs to its end
 * inside the fetch (no detached gc), so the packs hold everything its branches reach whenever no fetch is
 * under way; fetches and links are one at a time per cache in this process.
 */

/** Options that keep every fetch a pack and any gc inside the fetch that triggered it. */
const CACHE_CONFIG = [
  "-c",
  "fetch.unpackLimit=1",
  "-c",
  "transfer.unpackLimit=1",
  "-c",
  "gc.autoDetach=false",
];

export interface CacheRemote {
  remote: string;
  remoteConfig: string[];
  token?: string;
  signal: AbortSignal;
  timeoutMs: number;
}

export type CacheFill =
  /** `heads`: each branch's commit, now in the mirror's objects; `fetched`: whether the remote was asked. */
  | { ok: true; heads: Map<string, string>; fetched: boolean }
  /** What failed (the remote's answer, or the cache's own problem), for Dispatch's log. */
  | { ok: false; step: string; detail: string };

const queues = new Map<string, Promise<unknown>>();

/** Runs `work` after every earlier one on the same cache (in this process) has settled. */
function serialised<T>(cache: string, work: () => Promise<T>): Promise<T> {
  const previous = queues.get(cache) ?? Promise.resolve();
  const next = previous.then(work, work);
  const tail = next.catch(() => undefined);
  queues.set(cache, tail);
  void tail.then(() => {
    if (queues.get(cache) === tail) queues.delete(cache);
  });
  return next;
}

/**
 * Puts the objects of `listed` (branch → commit, as the remote just listed them) into `mirror`, through the
 * cache at `cache`: branches whose commit the cache's own ref does not name are fetched into it first
 * (then its ref, the remote's a moment later, is the branch's commit), then the cache's packs the mirror
 * lacks are linked into it.
 */
export function fillFromCache(opts: {
  cache: string;
  mirror: string;
  listed: Map<string, string>;
  remote: CacheRemote;
}): Promise<CacheFill> {
  return serialised(opts.cache, async () => {
    const { cache, remote } = opts;
    if (!existsSync(join(cache, "HEAD"))) {
      await mkdir(cache, { recursive: true });
      const init = await hostGit(["init", "--quiet", "--bare", cache]);
      if (!init.ok) return failed("init", init);
    }
    const cached = await cacheHeads(cache);
    if (!cached.ok) return cached;
    const stale = [...opts.listed].filter(([branch, sha]) => cached.heads.get(branch) !== sha);
    let heads = cached.heads;
    if (stale.length > 0) {
      const fetch = await hostGit(
        [
          ...CACHE_CONFIG,
          "fetch",
          "--quiet",
          "--no-tags",
          "--no-write-fetch-head",
          "--",
          remote.remote,
          ...stale.map(([branch]) => `+refs/heads/${branch}:refs/heads/${branch}`),
        ],
        {
          gitDir: cache,
          remote: remote.remote,
          remoteConfig: remote.remoteConfig,
          ...(remote.token ? { token: remote.token } : {}),
          signal: remote.signal,
          timeoutMs: remote.timeoutMs,
        },
      );
      if (!fetch.ok) return failed("fetch", fetch);
      const after = await cacheHeads(cache);
      if (!after.ok) return after;
      heads = after.heads;
    }
    try {
      await linkPacks(join(cache, "objects", "pack"), join(opts.mirror, "objects", "pack"));
    } catch (err) {
      return { ok: false, step: "link", detail: err instanceof Error ? err.message : String(err) };
    }
    // Its last use: what retention reads to remove a cache no run needs any more.
    const now = new Date();
    await utimes(cache, now, now);
    const wanted = new Map<string, string>();
    for (const branch of opts.listed.keys()) {
      const sha = heads.get(branch);
      if (sha) wanted.set(branch, sha);
    }
    return { ok: true, heads: wanted, fetched: stale.length > 0 };
  });
}

function failed(step: string, result: HostGitResult): CacheFill {
  return { ok: false, step, detail: reason(result) };
}

async function cacheHeads(
  cache: string,
): Promise<{ ok: true; heads: Map<string, string> } | (CacheFill & { ok: false })> {
  const listed = await hostGit(["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"], {
    gitDir: cache,
  });
  if (!listed.ok) return { ok: false, step: "for-each-ref", detail: reason(listed) };
  const heads = new Map<string, string>();
  for (const line of text(listed).split("\n")) {
    const m = /^([0-9a-f]{40,64}) refs\/heads\/(.+)$/.exec(line);
    if (m) heads.set(m[2]!, m[1]!);
  }
  return { ok: true, heads };
}

/**
 * Hard-links every pack of `from` that `to` lacks (a copy across file systems): its data first, its index
 * last, since git sees a pack only through its index.
 */
async function linkPacks(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  const have = new Set(await readdir(to));
  const names = await readdir(from);
  for (const idx of names.filter((n) => n.endsWith(".idx"))) {
    if (have.has(idx)) continue;
    const stem = idx.slice(0, -".idx".length);
    for (const name of [`${stem}.pack`, `${stem}.rev`, idx]) {
      if (!names.includes(name) || have.has(name)) continue;
      await link(join(from, name), join(to, name)).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code === "EEXIST") return;
        if (err.code !== "EXDEV") throw err;
        await copyFile(join(from, name), join(to, name));
      });
    }
  }
}
