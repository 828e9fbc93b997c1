import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// @agent-dispatch/client as a consumer gets it: `npm install` of the package's folder into an empty
// project, packed as for the registry (`--install-links`), offline. A copy of the folder is built with
// the package's own tsconfig.json (what `prepare` does), so the test neither needs nor rewrites the
// dist/ that the rest of the suite runs the CLI with.

const PACKAGE = fileURLToPath(new URL("../", import.meta.url));
const TSC = fileURLToPath(new URL("../../../node_modules/.bin/tsc", import.meta.url));
const MANIFEST = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"));
let dir: string;
let consumer: string;

function npm(args: string[], cwd: string) {
  const run = spawnSync("npm", [...args, "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, npm_config_update_notifier: "false" },
  });
  expect(run.status, run.stdout + run.stderr).toBe(0);
  return run;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "dispatch-client-package-"));
  const copy = join(dir, "typescript");
  for (const entry of ["package.json", "README.md", "tsconfig.json", "src"]) {
    cpSync(join(PACKAGE, entry), join(copy, entry), { recursive: true });
  }
  const build = spawnSync(TSC, ["-p", join(copy, "tsconfig.json")], { encoding: "utf8" });
  expect(build.stdout + build.stderr).toBe("");
  consumer = join(dir, "consumer");
  mkdirSync(consumer);
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", type: "module" }));
  npm(["install", "--install-links", copy], consumer);
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the @agent-dispatch/client package", () => {
  it("declares no dependency a consumer would install", () => {
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies", "bundleDependencies"]) {
      expect(MANIFEST[field], field).toBeUndefined();
    }
  });

  it("installs into an empty project as itself alone", () => {
    expect(readdirSync(join(consumer, "node_modules")).filter((name) => !name.startsWith("."))).toEqual([
      "@agent-dispatch",
    ]);
    expect(readdirSync(join(consumer, "node_modules/@agent-dispatch"))).toEqual(["client"]);
    const lock = JSON.parse(readFileSync(join(consumer, "package-lock.json"), "utf8"));
    expect(Object.keys(lock.packages).sort()).toEqual(["", "node_modules/@agent-dispatch/client"]);
    const installed = join(consumer, "node_modules/@agent-dispatch/client");
    expect(readdirSync(installed).sort()).toEqual(["README.md", "dist", "package.json"]);
    for (const target of [MANIFEST.exports["."].types, MANIFEST.exports["."].default]) {
      expect(readdirSync(join(installed, dirname(target))), target).toContain(target.split("/").pop());
    }
  });

  it("imports in Node from a consumer's node_modules", () => {
    const script = `
      import Dispatch, { Dispatch as Named, NotFoundError, APIError, isTerminalState } from "@agent-dispatch/client";
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
      `import Dispatch, { NotFoundError, type RunItem } from "@agent-dispatch/client";
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

  it("has no runtime dependencies in its source either: every import is a file of src/", () => {
    const root = join(PACKAGE, "src");
    const files = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const source = readFileSync(join(root, file), "utf8");
      for (const [, specifier] of source.matchAll(/(?:import|export)[^"';]*?from\s+"([^"]+)"/g)) {
        expect(specifier, `${file} imports ${specifier}`).toMatch(/^\.\.?\//);
        const target = resolve(root, dirname(file), specifier!);
        expect(relative(root, target).startsWith(".."), `${file} imports ${specifier}`).toBe(false);
      }
      expect(source, `${file} must not need Node's globals`).not.toMatch(/\bBuffer\b|\brequire\(/);
    }
  });
});
