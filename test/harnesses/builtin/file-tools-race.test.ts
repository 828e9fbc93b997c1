import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BuiltinHarness } from "../../../src/harnesses/builtin/builtin-harness.ts";
import { BwrapSandbox, findBwrap } from "../../../src/sandbox/bwrap-sandbox.ts";
import { harnessContext, scriptedModel, type Turn } from "./support.ts";

const MARKER = "host-secret-5e1f0c";

/**
 * Swaps paths in the workspace as fast as it can, the way the agent's own processes could: `target`
 * between a regular file and a symlink to the host's secret, `out` between a file and a symlink to a host
 * file, `dir` between a directory and a symlink to the host directory. Every swap of a file is a rename,
 * so the path always exists.
 */
const SWAPPER = `
const fs = require("node:fs");
const [ws, secret, victim, hostDir] = process.argv.slice(1);
// The tools create and remove paths too (write_file makes dir/): a failed step is just retried.
const attempt = (step) => { try { step(); } catch {} };
const swap = (name, make) => attempt(() => { make(ws + "/." + name); fs.renameSync(ws + "/." + name, ws + "/" + name); });
const dir = ws + "/dir";
process.stdout.write("ready\\n");
for (;;) {
  attempt(() => fs.rmSync(ws + "/.target", { force: true }));
  attempt(() => fs.rmSync(ws + "/.out", { force: true }));
  swap("target", (p) => fs.symlinkSync(secret, p));
  swap("out", (p) => fs.symlinkSync(victim, p));
  attempt(() => fs.rmSync(dir, { recursive: true, force: true }));
  attempt(() => fs.symlinkSync(hostDir, dir));
  swap("target", (p) => fs.writeFileSync(p, "plain text\\n"));
  swap("out", (p) => fs.writeFileSync(p, "plain text\\n"));
  attempt(() => fs.rmSync(dir, { force: true }));
  attempt(() => fs.mkdirSync(dir));
  attempt(() => fs.writeFileSync(dir + "/inside.txt", "plain text\\n"));
}`;

const metSymlink = (output: string) => output.includes("outside the workspace");
const metWorkspace = (output: string) => output.startsWith("wrote") || output.includes("dir/inside.txt");

const raceTurn: Turn = {
  calls: [
    { tool: "read_file", input: { path: "target" } },
    { tool: "read_file", input: { path: "dir/secret.txt" } },
    { tool: "write_file", input: { path: "out", content: "OVERWRITTEN\n" } },
    { tool: "edit_file", input: { path: "out", old_string: "t", new_string: "EDITED", replace_all: true } },
    { tool: "write_file", input: { path: "dir/victim.txt", content: "OVERWRITTEN\n" } },
    { tool: "list_files", input: { path: "dir" } },
    { tool: "search_files", input: { pattern: MARKER, path: "dir" } },
    { tool: "search_files", input: { pattern: MARKER } },
    { tool: "search_files", input: { pattern: MARKER, path: "target" } },
  ],
};

describe("file tools against a symlink race (real bwrap)", () => {
  it("never read or write a host file through a path swapped to a symlink", async () => {
    const found = await findBwrap(undefined);
    if (!("bwrap" in found)) throw new Error(`this test needs bubblewrap: ${found.problem}`);
    const bwrap = found.bwrap;
    // Outside the workspace, where only Dispatch's own process could reach.
    const host = await mkdtemp(join(tmpdir(), "dispatch-host-"));
    const secret = join(host, "secret.txt");
    const victim = join(host, "victim.txt");
    await writeFile(secret, `${MARKER}\n`);
    await writeFile(victim, "untouched\n");

    // At least 8 racing turns, and more (up to 200) until the tools have met both a symlink and the
    // workspace's own files: on a loaded machine the swapper may run in bursts.
    let raced = 0;
    const sawBoth = () => {
      const outputs = t.events.filter((e) => e.type === "tool_result").map((e) => String(e.data.output));
      return outputs.some(metSymlink) && outputs.some(metWorkspace);
    };
    const next = (): Turn => {
      if (raced >= 200 || (raced >= 8 && sawBoth())) return { text: "done" };
      raced++;
      return raceTurn;
    };
    const mock = scriptedModel(Array.from({ length: 201 }, () => next));
    const harness = new BuiltinHarness({
      resolveModel: () => ({ id: "mock/mock-model", model: mock.model }),
    });
    const t = await harnessContext(["race"], {
      sandbox: (workspace, runId) =>
        new BwrapSandbox({ bwrap, workspace: realpathSync(workspace), runId, hide: [], network: false }),
    });
    const swapper = spawn(process.execPath, ["-e", SWAPPER, t.workspace, secret, victim, host], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await new Promise((resolve) => swapper.stdout.once("data", resolve));
      expect((await harness.run(t.ctx)).status).toBe("succeeded");
    } finally {
      const gone = new Promise((resolve) => swapper.once("exit", resolve));
      swapper.kill("SIGKILL");
      await gone;
      await t.cleanup();
    }
    try {
      const results = t.events.filter((e) => e.type === "tool_result").map((e) => e.data);
      expect(results).toHaveLength(raced * raceTurn.calls!.length);
      const outputs = results.map((r) => String(r.output));
      // A listing of the host directory would show secret.txt (the tools never create one in the workspace).
      const listings = results.filter((r) => r.tool === "list_files").map((r) => String(r.output));
      expect({
        leaked: outputs.filter((o) => o.includes(MARKER)),
        listedHost: listings.filter((o) => o.includes("secret.txt")),
        victim: await readFile(victim, "utf8"),
        secret: await readFile(secret, "utf8"),
      }).toEqual({ leaked: [], listedHost: [], victim: "untouched\n", secret: `${MARKER}\n` });
      // The race was real: the tools met both the symlinks and the workspace's own files.
      expect(outputs.some(metSymlink)).toBe(true);
      expect(outputs.some(metWorkspace)).toBe(true);
    } finally {
      await rm(host, { recursive: true, force: true });
    }
  });
});
