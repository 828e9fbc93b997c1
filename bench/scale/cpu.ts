import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU time spent by processes, from /proc (Linux), in milliseconds: what a batch of runs cost the machine,
 * which a loaded machine's wall clock does not tell (bench/README.md, "Third round: commits per run").
 */

interface Stat {
  ppid: number;
  /** utime + stime: the process itself. */
  ownMs: number;
  /** cutime + cstime: its children it has waited for (the run's commands; PostgreSQL's ended backends). */
  childrenMs: number;
}

/** /proc/<pid>/stat, or undefined when the process is gone. Linux fixes USER_HZ at 100 for /proc. */
function stat(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The fields after the parenthesised command name: state is the 3rd field of stat(5), ppid the 4th.
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return {
      ppid: Number(f[1]),
      ownMs: (Number(f[11]) + Number(f[12])) * 10,
      childrenMs: (Number(f[13]) + Number(f[14])) * 10,
    };
  } catch {
    return undefined;
  }
}

/** A process's CPU, its waited-for children's included; 0 once it is gone. */
export function processCpuMs(pid: number | undefined): number {
  const s = pid === undefined ? undefined : stat(pid);
  return s ? s.ownMs + s.childrenMs : 0;
}

/**
 * The PostgreSQL server listening on `port`: its postmaster's CPU (with the backends that ended) and that
 * of every backend still running. Undefined when no such server is found.
 */
export function postgresCpuMs(port: number): number | undefined {
  const pids = readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
  const postmaster = pids.find((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return argv.some((a) => a.endsWith("/postgres") || a === "postgres") && argv.includes(String(port));
    } catch {
      return false;
    }
  });
  if (postmaster === undefined) return undefined;
  let total = processCpuMs(postmaster);
  for (const pid of pids) {
    const s = stat(pid);
    if (s && s.ppid === postmaster) total += s.ownMs + s.childrenMs;
  }
  return total;
}
