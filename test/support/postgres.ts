import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/**
 * A throwaway PostgreSQL cluster for tests: Debian's server binaries (package `postgresql`), initdb into a
 * temporary directory, the server on 127.0.0.1 and a free port, trust authentication (nothing but this
 * machine's loopback reaches it), durability off (a test database never has to survive a crash). The
 * server refuses to run as root, so as root it runs as the `postgres` system user (or `nobody`).
 */
export interface PostgresCluster {
  /** The connection URL of a database of this cluster. */
  url(database: string): string;
  /** A new empty database (named `name`, or a fresh name), or a copy of `template`; its URL. */
  createDatabase(opts?: { name?: string; template?: string }): Promise<string>;
  dropDatabase(url: string): Promise<void>;
  /**
   * Stops the server as `pg_ctl stop -m fast` does (SIGINT: clients disconnected, data kept) and starts
   * it again on the same port and data directory once `down` has settled: an outage of a live database.
   */
  restart(down?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

const SUPERUSER = "postgres";

/** Why PostgreSQL tests cannot run here, or undefined when the server binaries are present. */
export function postgresUnavailable(): string | undefined {
  return serverBinDir() ? undefined : "PostgreSQL's server binaries (initdb) were not found";
}

/** The bin directory of the newest installed PostgreSQL server (Debian: /usr/lib/postgresql/<major>/bin). */
function serverBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const majors = readdirSync(root)
      .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a));
    if (majors[0]) return join(root, majors[0], "bin");
  }
  try {
    const dir = execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
    if (existsSync(join(dir, "initdb"))) return dir;
  } catch {
    // no pg_config: not installed
  }
  return undefined;
}

/** The account the server runs as: ourselves, or an unprivileged one when we are root. */
function serverAccount(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of [SUPERUSER, "nobody"]) {
    try {
      const uid = Number(execFileSync("id", ["-u", user], { encoding: "utf8" }).trim());
      const gid = Number(execFileSync("id", ["-g", user], { encoding: "utf8" }).trim());
      return { uid, gid };
    } catch {
      // no such user: try the next
    }
  }
  throw new Error("running as root, but neither a postgres nor a nobody user exists to run PostgreSQL as");
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

function run(
  file: string,
  args: string[],
  account: { uid: number; gid: number } | undefined,
  cwd: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, stdio: ["ignore", "pipe", "pipe"], ...account });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${file} exited with ${code}:\n${output}`)),
    );
  });
}

/** Starts a cluster; throws (with the server's output) when it cannot. */
export async function startPostgres(): Promise<PostgresCluster> {
  const bin = serverBinDir();
  if (!bin) throw new Error("PostgreSQL is not installed (apt-get install -y postgresql)");
  const account = serverAccount();
  const dir = await mkdtemp(join(tmpdir(), "dispatch-pg-"));
  if (account) chownSync(dir, account.uid, account.gid);
  const data = join(dir, "data");
  await run(
    join(bin, "initdb"),
    ["-D", data, "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"],
    account,
    dir,
  );

  let output = "";
  /** The server on `port`, or undefined (with its output in `output`) when it exited before accepting. */
  const launch = async (port: number): Promise<ChildProcess | undefined> => {
    const started = spawn(
      join(bin, "postgres"),
      [
        ...["-D", data, "-p", String(port), "-h", "127.0.0.1", "-k", dir],
        ...["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
        ...["-c", "max_connections=300", "-c", "shared_buffers=32MB", "-c", "log_min_messages=warning"],
      ],
      { cwd: dir, stdio: ["ignore", "pipe", "pipe"], ...account },
    );
    output = "";
    started.stdout?.on("data", (c: Buffer) => (output += c.toString()));
    started.stderr?.on("data", (c: Buffer) => (output += c.toString()));
    const exited = new Promise<void>((resolve) => started.once("exit", () => resolve()));
    return (await waitReady(port, exited)) ? started : undefined;
  };

  let child: ChildProcess | undefined;
  let port = 0;
  // A port found free can be taken before the server binds it: try a few.
  for (let attempt = 0; attempt < 5 && !child; attempt++) {
    port = await freePort();
    child = await launch(port);
    if (!child && !/already in use|could not bind/i.test(output)) break;
  }
  if (!child) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL did not start:\n${output}`);
  }
  let server = child;
  // Should this process end without stop() (a crashed test worker), the server ends with it.
  const killOnExit = () => server.kill("SIGQUIT");
  process.once("exit", killOnExit);
  const fastShutdown = async () => {
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGINT"); // fast shutdown: disconnects clients, no checkpoint wait worth having
      await exited;
    }
  };

  const url = (database: string) => `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
  const admin = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url("postgres") });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };

  return {
    url,
    async createDatabase(opts = {}) {
      const name = opts.name ?? `test_${randomBytes(6).toString("hex")}`;
      const template = opts.template ? ` TEMPLATE ${pg.escapeIdentifier(opts.template)}` : "";
      await admin((c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${template}`));
      return url(name);
    },
    async dropDatabase(databaseUrl) {
      const name = new URL(databaseUrl).pathname.slice(1);
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
    },
    async restart(down) {
      await fastShutdown();
      await down?.();
      // Clients are already told the port is ours: it is the same port again, or a failure.
      const restarted = await launch(port);
      if (!restarted) throw new Error(`PostgreSQL did not start again on port ${port}:\n${output}`);
      server = restarted;
    },
    async stop() {
      process.off("exit", killOnExit);
      await fastShutdown();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Whether the server accepts connections before it exits or 60 s pass. */
async function waitReady(port: number, exited: Promise<void>): Promise<boolean> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + 60_000;
  while (!gone && Date.now() < deadline) {
    const client = new pg.Client({ host: "127.0.0.1", port, user: SUPERUSER, database: "postgres" });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.end();
      return true;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return false;
}
