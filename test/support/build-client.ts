import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Vitest's global setup: builds clients/typescript/dist before any test file runs. The server and its CLI
 * import the client by its package name, which resolves to that build (what `npm ci` made), so without
 * this a test run after an edit of the client's source would exercise the previous client.
 */
export default function buildClient(): void {
  const tsc = fileURLToPath(new URL("../../node_modules/.bin/tsc", import.meta.url));
  const project = fileURLToPath(new URL("../../clients/typescript/tsconfig.json", import.meta.url));
  const build = spawnSync(tsc, ["-p", project], { encoding: "utf8" });
  if (build.status !== 0) {
    throw new Error(
      `building clients/typescript failed (${build.status ?? build.error}):\n${build.stdout}${build.stderr}`,
    );
  }
}
