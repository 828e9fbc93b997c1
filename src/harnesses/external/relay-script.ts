/**
 * What runs first in an external agent's sandbox, under Node: it listens on the sandbox's own loopback
 * (127.0.0.1, a port the kernel picks) and relays every connection to the model gateway's unix socket,
 * then starts the agent with that port put in for PORT_PLACEHOLDER in its arguments and environment (its
 * base URL), its stdio inherited, and exits as the agent does. Signals are passed on, so stopping the
 * relay stops the agent (the sandbox's process group is killed anyway). Written as plain JavaScript into
 * the run's private area at each execution: the same file whether Dispatch runs from source or a build.
 *
 * argv: relay.mjs <gateway socket> -- <program> <args…>
 */
export const PORT_PLACEHOLDER = "__DISPATCH_GATEWAY_PORT__";

export const RELAY_SCRIPT = `import { spawn } from "node:child_process";
import { connect, createServer } from "node:net";
import { constants } from "node:os";

const [socketPath, separator, program, ...args] = process.argv.slice(2);
if (!socketPath || separator !== "--" || !program) {
  process.stderr.write("usage: relay.mjs <socket> -- <program> <args...>\\n");
  process.exit(2);
}
const server = createServer((client) => {
  const upstream = connect(socketPath);
  client.pipe(upstream);
  upstream.pipe(client);
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => client.destroy());
});
server.listen(0, "127.0.0.1", () => {
  const port = String(server.address().port);
  const put = (value) => value.split(${JSON.stringify(PORT_PLACEHOLDER)}).join(port);
  const env = Object.fromEntries(Object.entries(process.env).map(([k, v]) => [k, put(v ?? "")]));
  const child = spawn(program, args.map(put), { stdio: "inherit", env });
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => child.kill(sig));
  child.on("error", (err) => {
    process.stderr.write("dispatch: cannot start " + program + ": " + err.message + "\\n");
    process.exit(127);
  });
  child.on("exit", (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
});
`;
