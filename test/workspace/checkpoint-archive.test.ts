import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import {
  chmod,
  link,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { restoreDirectories, snapshotDirectories } from "../../src/workspace/checkpoint-archive.ts";
import { gnuTar } from "../../src/workspace/gnu-tar.ts";

const MB = 2 ** 20;

/** Every entry under `dir`: its type, permission bits, and content or symlink target. */
async function tree(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(join(dir, prefix))).sort()) {
    const rel = join(prefix, name);
    const st = await lstat(join(dir, rel));
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isSymbolicLink()) out.push(`${rel} -> ${await readlink(join(dir, rel))}`);
    else if (st.isDirectory()) out.push(`${rel}/ ${mode}`, ...(await tree(dir, rel)));
    else if (st.isFIFO()) out.push(`${rel} fifo`);
    else out.push(`${rel} ${mode} ${(await readFile(join(dir, rel))).toString("utf8")}`);
  }
  return out;
}

/** Which tar wrote the archive: GNU's format marks its headers "ustar  ", POSIX's (node-tar) "ustar\0". */
function tarFormat(archive: Buffer): "gnu" | "posix" {
  return gunzipSync(archive).subarray(257, 265).toString("latin1") === "ustar  \0" ? "gnu" : "posix";
}

describe("checkpoint archives of a run's directories", () => {
  let dir: string;
  let source: string;
  let target: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-ckpt-archive-"));
    source = join(dir, "worker-a");
    target = join(dir, "worker-b");
    await mkdir(source);
    await mkdir(target);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  /** A snapshot of up to 64 entries is packed in the process; a larger one by GNU tar (where installed). */
  const sizes = [
    { packer: "node-tar, in the process (a small tree)", padding: 0 },
    { packer: "GNU tar where installed (a tree of more than 64 entries)", padding: 80 },
  ];

  async function pad(ws: string, files: number): Promise<void> {
    if (files === 0) return;
    await mkdir(join(ws, "padding"));
    for (let i = 0; i < files; i++) await writeFile(join(ws, "padding", `file-${i}.txt`), `${i}\n`);
  }

  it.each(sizes)(
    "restores files with their modes, empty directories, symlinks as they were, hard links, on another disk: $packer",
    async ({ padding }) => {
      const ws = join(source, "run1");
      await mkdir(join(ws, "src", "deep"), { recursive: true });
      await pad(ws, padding);
      await mkdir(join(ws, "empty"));
      await mkdir(join(ws, "private"), { mode: 0o700 });
      await writeFile(join(ws, "src", "deep", "main.py"), "print('hi')\n");
      await writeFile(join(ws, "run.sh"), "#!/bin/sh\necho run\n", { mode: 0o755 });
      await writeFile(join(ws, "private", "secret.txt"), "only me", { mode: 0o600 });
      await writeFile(join(ws, "readonly.txt"), "frozen", { mode: 0o444 });
      await chmod(join(ws, "private"), 0o700);
      await chmod(join(ws, "readonly.txt"), 0o444);
      await symlink("src/deep/main.py", join(ws, "main-link"));
      await symlink("/usr/bin/python3", join(ws, "python"));
      await symlink("../../outside", join(ws, "src", "up-and-out"));
      await symlink("missing", join(ws, "dangling"));
      await link(join(ws, "run.sh"), join(ws, "run-again.sh"));
      execFileSync("mkfifo", [join(ws, "pipe")]);
      const agent = join(source, "run1.agent");
      await mkdir(join(agent, "home", ".claude"), { recursive: true });
      await writeFile(join(agent, "sessions.json"), '{"claude":"s-1"}', { mode: 0o600 });
      await writeFile(join(agent, "home", ".claude", "s-1.jsonl"), '{"turn":1}\n');

      const snapshot = await snapshotDirectories({
        root: source,
        names: ["run1", "run1.agent"],
        limitBytes: MB,
      });
      expect(snapshot.ok).toBe(true);
      if (!snapshot.ok) return;
      expect(tarFormat(snapshot.archive)).toBe(padding && (await gnuTar()) ? "gnu" : "posix");
      await mkdir(join(target, "run1"));
      const restored = await restoreDirectories({
        root: target,
        names: ["run1", "run1.agent"],
        archive: snapshot.archive,
        limitBytes: MB,
      });
      expect(restored).toEqual({ ok: true, restored: ["run1", "run1.agent"] });

      const before = (await tree(source)).filter((e) => e !== "run1/pipe fifo");
      expect(await tree(target)).toEqual(before);
      expect(await tree(target)).toEqual(
        expect.arrayContaining([
          "run1/empty/ 755",
          "run1/private/ 700",
          "run1/private/secret.txt 600 only me",
          "run1/readonly.txt 444 frozen",
          "run1/run.sh 755 #!/bin/sh\necho run\n",
          "run1/python -> /usr/bin/python3",
          "run1/src/up-and-out -> ../../outside",
          "run1/dangling -> missing",
          'run1.agent/sessions.json 600 {"claude":"s-1"}',
        ]),
      );
      // The FIFO is not part of a checkpoint; the hard link is one file again.
      expect(existsSync(join(target, "run1", "pipe"))).toBe(false);
      const [a, b] = await Promise.all(["run.sh", "run-again.sh"].map((f) => lstat(join(target, "run1", f))));
      expect(a!.ino).toBe(b!.ino);
      // Nothing of the unpacking is left next to the directories.
      expect((await readdir(target)).sort()).toEqual(["run1", "run1.agent"]);
    },
  );

  it.each(sizes)(
    "restores paths and symlink targets longer than a tar header holds: $packer",
    async ({ padding }) => {
      const ws = join(source, "run1");
      const deep = join(ws, ...Array.from({ length: 12 }, (_, i) => `directory-${i}-of-a-deep-tree`));
      await mkdir(deep, { recursive: true });
      await pad(ws, padding);
      await writeFile(join(deep, `${"long-name-".repeat(12)}.txt`), "deep\n");
      await symlink(join(deep, `${"long-name-".repeat(12)}.txt`), join(ws, "far"));
      const snapshot = await snapshotDirectories({ root: source, names: ["run1"], limitBytes: 10 * MB });
      expect(snapshot.ok).toBe(true);
      if (!snapshot.ok) return;
      const restored = await restoreDirectories({
        root: target,
        names: ["run1"],
        archive: snapshot.archive,
        limitBytes: 10 * MB,
      });
      expect(restored).toEqual({ ok: true, restored: ["run1"] });
      expect(await tree(join(target, "run1"))).toEqual(await tree(ws));
    },
  );

  it("refuses to snapshot more than the limit, saying how much the run holds", async () => {
    const ws = join(source, "run1");
    await mkdir(ws);
    await writeFile(join(ws, "big.bin"), randomBytes(3 * MB));
    const refused = await snapshotDirectories({
      root: source,
      names: ["run1", "run1.agent"],
      limitBytes: 2 * MB,
    });
    expect(refused).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/at least 3 MB on disk, over the 2 MB/),
    });
    const taken = await snapshotDirectories({
      root: source,
      names: ["run1", "run1.agent"],
      limitBytes: 8 * MB,
    });
    expect(taken.ok).toBe(true);
  });

  it("restores only into empty directories", async () => {
    await mkdir(join(source, "run1"));
    await writeFile(join(source, "run1", "a.txt"), "a");
    const snapshot = await snapshotDirectories({ root: source, names: ["run1"], limitBytes: MB });
    if (!snapshot.ok) throw new Error(snapshot.reason);
    await mkdir(join(target, "run1"));
    await writeFile(join(target, "run1", "mine.txt"), "kept");
    const refused = await restoreDirectories({
      root: target,
      names: ["run1"],
      archive: snapshot.archive,
      limitBytes: MB,
    });
    expect(refused).toMatchObject({ ok: false, reason: expect.stringMatching(/not empty/) });
    expect(await tree(target)).toEqual(["run1/ 755", "run1/mine.txt 644 kept"]);
  });

  describe("a tampered archive", () => {
    /** GNU tar writes what a snapshot never would: entries appended from other directories, names transformed. */
    const gnuTar = (args: string[]) => execFileSync("tar", args, { stdio: ["ignore", "pipe", "pipe"] });

    const expectNothingWritten = async (archive: Buffer, outside: string) => {
      const result = await restoreDirectories({
        root: target,
        names: ["run1", "run1.agent"],
        archive,
        limitBytes: MB,
      });
      expect(result.ok).toBe(false);
      expect(await readdir(outside)).toEqual([]);
      // Neither directory was restored, and nothing of the attempt is left.
      expect(await readdir(target)).toEqual([]);
      return result;
    };

    it("never writes through a symlink it planted, wherever the symlink points", async () => {
      const outside = join(dir, "outside");
      await mkdir(outside);
      // First the symlink run1/link -> outside, then a file "under" it: run1/link/pwned.
      const planted = join(dir, "planted");
      await mkdir(join(planted, "run1"), { recursive: true });
      await symlink(outside, join(planted, "run1", "link"));
      const under = join(dir, "under");
      await mkdir(join(under, "run1", "link"), { recursive: true });
      await writeFile(join(under, "run1", "link", "pwned"), "owned");
      const tarFile = join(dir, "evil.tar");
      gnuTar(["-cf", tarFile, "-C", planted, "run1"]);
      gnuTar(["-rf", tarFile, "-C", under, "run1/link/pwned"]);
      const archive = execFileSync("gzip", ["-c", tarFile]);
      await expectNothingWritten(archive, outside);

      // The same through the agent's area: a symlink in one directory, a write in it from the other.
      await rm(planted, { recursive: true });
      await mkdir(join(planted, "run1"), { recursive: true });
      await symlink("../run1.agent", join(planted, "run1", "to-agent"));
      await symlink(outside, join(planted, "run1", "to-outside"));
      await mkdir(join(under, "run1", "to-outside"), { recursive: true });
      await writeFile(join(under, "run1", "to-outside", "pwned"), "owned");
      gnuTar(["-cf", tarFile, "-C", planted, "run1"]);
      gnuTar(["-rf", tarFile, "-C", under, "run1/to-outside/pwned"]);
      const result = await expectNothingWritten(execFileSync("gzip", ["-c", tarFile]), outside);
      expect(result).toMatchObject({ reason: expect.stringMatching(/symlink|twice|could not be unpacked/) });
    });

    it("refuses paths outside its directories, .. and absolute ones", async () => {
      const outside = join(dir, "outside");
      await mkdir(outside);
      const src = join(dir, "src");
      await mkdir(join(src, "run1"), { recursive: true });
      await writeFile(join(src, "run1", "escape"), "owned");
      const tarFile = join(dir, "evil.tar");
      for (const transform of [
        "s,^run1/escape,run1/../../outside/escape,",
        "s,^run1/escape,other-run/escape,",
      ]) {
        gnuTar(["-cf", tarFile, "-C", src, "--transform", transform, "run1/escape"]);
        const result = await expectNothingWritten(execFileSync("gzip", ["-c", tarFile]), outside);
        expect(result).toMatchObject({ reason: expect.stringMatching(/outside the directories/) });
      }
      gnuTar([
        "-cf",
        tarFile,
        "-P",
        "-C",
        src,
        "--transform",
        `s,^run1/escape,${outside}/escape,`,
        "run1/escape",
      ]);
      await expectNothingWritten(execFileSync("gzip", ["-c", tarFile]), outside);
    });
  });
});
