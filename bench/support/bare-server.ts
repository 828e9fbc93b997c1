import { fork } from "node:child_process";
import { createServer, type RequestListener } from "node:http";
import { fileURLToPath } from "node:url";
import { BenchChild } from "./child.ts";

/**
 * The baselines the benchmarks compare Dispatch with: the least a node:http server can do for the same
 * request. Each runs in a child process of its own, as Dispatch does, so both get a core and neither
 * competes with the load generator. A baseline is a script that calls serveBare(); startBareServer()
 * forks it and learns its port over IPC.
 */

/** Forks the baseline `script` with `env` and waits until it listens; the URL has no path. */
export async function startBareServer(
  script: URL,
  opts: { env?: Record<string, string>; nodeFlags?: string[] } = {},
): Promise<{ url: string; child: BenchChild }> {
  const child = new BenchChild(
    "bare endpoint",
    fork(fileURLToPath(script), [], {
      env: { PATH: process.env.PATH ?? "", ...opts.env },
      execArgv: [...process.execArgv, ...(opts.nodeFlags ?? [])],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    }),
  );
  const port = await new Promise<number>((done, fail) => {
    child.proc.once("message", (msg) => done((msg as { port: number }).port));
    child.proc.once("exit", (code) => fail(new Error(`bare endpoint exited (${code})\n${child.tail()}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

/** In the baseline's process: serves `handler` on 127.0.0.1, on a port the kernel picks. */
export function serveBare(handler: RequestListener): void {
  const server = createServer(handler);
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    if (typeof address !== "object" || !address) throw new Error("bare server: no address");
    process.send?.({ port: address.port });
  });
  // The bench going away (even abruptly) must not leave this server behind.
  process.on("disconnect", () => process.exit(0));
  process.on("SIGTERM", () => process.exit(0));
}
