import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// `agent-dispatch/client` as a consumer gets it: the package built by `tsc -p tsconfig.build.json`
// (what `npm run build` and `prepare` do), installed into a consumer's node_modules, imported by Node
// and type-checked by tsc through the package's "exports" map.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TSC = join(ROOT, "node_modules/.bin/tsc");
let dir: string;
let consumer: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "dispatch-package-"));
  const pkg = join(dir, "agent-dispatch");
  const build = spawnSync(TSC, ["-p", join(ROOT, "tsconfig.build.json"), "--outDir", join(pkg, "dist")], {
    encoding: "utf8",
  });
  expect(build.stdout + build.stderr).toBe("");
  cpSync(join(ROOT, "package.json"), join(pkg, "package.json"));
  consumer = join(dir, "consumer");
  mkdirSync(join(consumer, "node_modules"), { recursive: true });
  symlinkSync(pkg, join(consumer, "node_modules/agent-dispatch"), "dir");
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", type: "module" }));
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the agent-dispatch/client export", () => {
  it("points at files the build produces", () => {
    const exports = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).exports["./client"];
    for (const target of [exports.types, exports.default]) {
      expect(existsSync(join(dir, "agent-dispatch", target)), target).toBe(true);
    }
  });

  it("imports in Node from a consumer's node_modules", () => {
    const script = `
      import Dispatch, { Dispatch as Named, NotFoundError, APIError, isTerminalState } from "agent-dispatch/client";
      const client = new Dispatch({ apiKey: "dsp_x", baseURL: "http://127.0.0.1:9" });
      console.log(JSON.stringify([Dispatch === Named, new NotFoundError(404, undefined, "x", undefined) instanceof APIError,
        isTerminalState("FAILED"), client.baseURL]));`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: consumer,
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual([true, true, true, "http://127.0.0.1:9/api/v1"]);
  });

  it("type-checks in a consumer's TypeScript project (nodenext and bundler resolution)", () => {
    writeFileSync(
      join(consumer, "use.ts"),
      `import Dispatch, { NotFoundError, type RunItem } from "agent-dispatch/client";
const client = new Dispatch({ apiKey: "dsp_x" });
const run: Promise<RunItem> = client.runs.retrieve("id");
export const missing = run.catch((e: unknown) => e instanceof NotFoundError);
// @ts-expect-error: the typed surface knows the fields
export const wrong: Promise<number> = client.runs.retrieve("id");
`,
    );
    for (const [module, resolution] of [
      ["nodenext", "nodenext"],
      ["esnext", "bundler"],
    ]) {
      const checked = spawnSync(
        TSC,
        ["--noEmit", "--strict", "--module", module!, "--moduleResolution", resolution!].concat([
          "--target",
          "es2022",
          "--lib",
          "es2022,dom",
          "use.ts",
        ]),
        { cwd: consumer, encoding: "utf8" },
      );
      expect(checked.stdout + checked.stderr, `${module}/${resolution}`).toBe("");
      expect(checked.status).toBe(0);
    }
  });
});
