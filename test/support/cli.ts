import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `dispatch <args>` as a person runs it (node src/main.ts in a process of its own), with only PATH, HOME and
 * `env` in its environment: its exit code and output.
 */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The CLI pointed at a test's Dispatch with its key (DISPATCH_BASE_URL, DISPATCH_API_KEY). */
export function cliFor(t: () => { url: string; key: string }) {
  return (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
    runCli(args, { DISPATCH_BASE_URL: t().url, DISPATCH_API_KEY: t().key, ...env });
}
