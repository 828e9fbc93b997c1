import type { Stats } from "node:fs";
import {
  chmod,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative } from "node:path";
import { ownerGone, selfTag } from "./process-owner.ts";

/**
 * What of the host's /etc programs need. Everything else of /etc (shadow, ssl/private, the operator's
 * configuration) stays outside. Missing entries are skipped.
 */
export const ETC_ENTRIES = [
  "alternatives",
  "bash.bashrc",
  "ca-certificates",
  "ca-certificates.conf",
  "crypto-policies",
  "debian_version",
  "gai.conf",
  "gitconfig",
  "host.conf",
  "hosts",
  "inputrc",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "localtime",
  "magic",
  "magic.mime",
  "mime.types",
  "nsswitch.conf",
  "os-release",
  "pki/ca-trust",
  "pki/tls/certs",
  "profile",
  "protocols",
  "resolv.conf",
  "services",
  "ssl/certs",
  "ssl/openssl.cnf",
  "timezone",
];

/** Files each run binds over its /etc (AgentIdentity): they must exist in a read-only /etc to be bound on. */
const PER_RUN_FILES = ["passwd", "group", "resolv.conf"];

/** How often a sandbox's start looks whether the host's entries changed (in the background). */
const DEFAULT_REFRESH_MS = 10_000;
const PREFIX = "dispatch-sandbox-etc-";

interface Entry {
  /** Path under /etc. */
  rel: string;
  source: string;
  kind: "dir" | "file" | "symlink" | "hidden-dir" | "hidden-file";
  stats: Stats;
  target?: string;
}

interface Snapshot {
  dir: string;
  fingerprint: string;
  users: number;
  retired: boolean;
}

/**
 * The sandbox's /etc: ETC_ENTRIES copied into one directory that bubblewrap binds read-only with a single
 * mount. Bound one by one, the entries were bwrap's largest cost per command (each read-only bind re-reads
 * the whole mount table to remount what lies below it: bench/README.md, "Third round: starting
 * commands and bubblewrap"). The copy shows what the binds showed: an entry that is a symlink is followed (as a bind
 * follows it), what lies inside a directory is copied as it is (symlinks stay symlinks), and a path
 * Dispatch hides is an empty directory or file. Nothing is written back: the copy lies in a directory
 * only Dispatch can enter and is bound read-only.
 *
 * A sandbox keeps the copy it started with until it closes. A sandbox's start looks (at most every ten
 * seconds, without waiting for it) whether the host's entries changed, and if they did, the next ones
 * get a new copy; the old one is removed once no sandbox uses it. What a Dispatch that crashed left
 * behind is removed by the next one's first snapshot.
 */
export class EtcSnapshots {
  private readonly hide: string[];
  private readonly source: string;
  private readonly parent: string;
  private readonly refreshMs: number;
  private current: Snapshot | undefined;
  private building: Promise<Snapshot> | undefined;
  private checking = false;
  private checkedAt = 0;

  constructor(hide: string[], opts: { source?: string; parent?: string; refreshMs?: number } = {}) {
    this.hide = hide;
    this.source = opts.source ?? "/etc";
    this.parent = opts.parent ?? tmpdir();
    this.refreshMs = opts.refreshMs ?? DEFAULT_REFRESH_MS;
  }

  /** The /etc directory to bind for a sandbox, until `release` (its close). */
  async acquire(): Promise<{ dir: string; release: () => Promise<void> }> {
    if (!this.current) {
      this.building ??= sweep(this.parent).then(() => this.build());
      this.current = await this.building;
      this.checkedAt = Date.now();
    } else if (!this.checking && Date.now() - this.checkedAt >= this.refreshMs) {
      this.checking = true;
      void this.refresh().finally(() => {
        this.checking = false;
        this.checkedAt = Date.now();
      });
    }
    const snapshot = this.current;
    snapshot.users += 1;
    let released = false;
    return {
      dir: join(snapshot.dir, "etc"),
      release: async () => {
        if (released) return;
        released = true;
        snapshot.users -= 1;
        if (snapshot.retired && snapshot.users === 0)
          await rm(snapshot.dir, { recursive: true, force: true });
      },
    };
  }

  /** A new copy when the host's entries changed since the current one was made. */
  private async refresh(): Promise<void> {
    const entries = await this.walk().catch(() => undefined);
    if (!entries || fingerprint(entries) === this.current?.fingerprint) return;
    const next = await this.build(entries).catch(() => undefined);
    if (!next) return;
    const old = this.current;
    this.current = next;
    if (old) {
      old.retired = true;
      if (old.users === 0) await rm(old.dir, { recursive: true, force: true });
    }
  }

  private async build(walked?: Entry[]): Promise<Snapshot> {
    const entries = walked ?? (await this.walk());
    // Named after this process, so that a later Dispatch can tell it is left over.
    const dir = await mkdtemp(join(this.parent, `${PREFIX}${selfTag}-`));
    const root = join(dir, "etc");
    try {
      await mkdir(root, { mode: 0o755 });
      await chmod(root, 0o755);
      const dirs: Entry[] = [];
      for (const entry of entries) {
        const to = join(root, entry.rel);
        await mkdir(dirname(to), { recursive: true, mode: 0o755 });
        if (entry.kind === "dir" || entry.kind === "hidden-dir") {
          await mkdir(to, { mode: 0o755 });
          if (entry.kind === "dir") dirs.push(entry);
        } else if (entry.kind === "symlink") {
          await symlink(entry.target!, to);
        } else if (entry.kind === "hidden-file") {
          await writeFile(to, "", { mode: 0o644 });
        } else {
          // One Dispatch cannot read (it runs unprivileged) is left out: the agent could not read it either.
          const copied = await copyFile(entry.source, to).then(
            () => true,
            () => false,
          );
          if (copied) await chmod(to, entry.stats.mode & 0o777);
        }
      }
      // Modes of directories last: one without write permission is filled first.
      for (const entry of dirs.reverse()) await chmod(join(root, entry.rel), entry.stats.mode & 0o777);
      for (const name of PER_RUN_FILES) {
        await writeFile(join(root, name), "", { flag: "wx", mode: 0o644 }).catch(() => {});
      }
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    return { dir, fingerprint: fingerprint(entries), users: 0, retired: false };
  }

  /** Every entry, parents before children. */
  private async walk(): Promise<Entry[]> {
    const entries: Entry[] = [];
    const visit = async (source: string, rel: string, stats: Stats): Promise<void> => {
      if (this.hide.some((h) => within(h, source))) {
        entries.push({ rel, source, kind: stats.isDirectory() ? "hidden-dir" : "hidden-file", stats });
      } else if (stats.isSymbolicLink()) {
        entries.push({ rel, source, kind: "symlink", stats, target: await readlink(source) });
      } else if (stats.isDirectory()) {
        entries.push({ rel, source, kind: "dir", stats });
        for (const name of (await readdir(source)).sort()) {
          const child = join(source, name);
          const childStats = await lstat(child).catch(() => undefined);
          if (childStats) await visit(child, join(rel, name), childStats);
        }
      } else if (stats.isFile()) {
        entries.push({ rel, source, kind: "file", stats });
      }
    };
    for (const name of ETC_ENTRIES) {
      const source = join(this.source, name);
      // Followed, as a bind of the entry follows it.
      const stats = await stat(source).catch(() => undefined);
      if (stats) await visit(source, name, stats);
    }
    return entries;
  }
}

function fingerprint(entries: Entry[]): string {
  return entries
    .map((e) => {
      const s = e.stats;
      return `${e.kind} ${e.rel} ${e.target ?? ""} ${s.ino} ${s.size} ${s.mode} ${s.mtimeMs} ${s.ctimeMs}`;
    })
    .join("\n");
}

/** Removes the copies of Dispatch processes that are gone. */
async function sweep(parent: string): Promise<void> {
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const owner = name.slice(PREFIX.length).match(/^(\d+\.\d+)-/)?.[1];
    if (ownerGone(owner)) await rm(join(parent, name), { recursive: true, force: true });
  }
}

function within(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

const shared = new Map<string, EtcSnapshots>();

/** This process's snapshots, one per set of hidden paths (one in Dispatch: its provider's). */
export function etcSnapshots(hide: string[]): EtcSnapshots {
  const key = JSON.stringify([...hide].sort());
  let snapshots = shared.get(key);
  if (!snapshots) {
    snapshots = new EtcSnapshots(hide);
    shared.set(key, snapshots);
  }
  return snapshots;
}
