import { readFileSync } from "node:fs";

/**
 * A process as a name can tell it apart from a later process with the same pid: `pid.starttime`. What
 * Dispatch leaves on the host for the length of its life (run cgroups, the sandbox's /etc) carries its
 * own, so that a later start removes what a crashed one left behind and never what a running one uses.
 */
export function ownerTag(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The fields after the command name (which may hold spaces) in parentheses; starttime is field 22.
    const startTime = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return startTime ? `${pid}.${startTime}` : undefined;
  } catch {
    return undefined;
  }
}

/** This process's tag. */
export const selfTag = ownerTag(process.pid) ?? `${process.pid}.0`;

/** Whether the process a tag names has gone (no tag: left by a version that did not say). */
export function ownerGone(tag: string | undefined): boolean {
  const owner = tag?.match(/^(\d+)\.(\d+)$/);
  if (!owner) return true;
  return ownerTag(Number(owner[1])) !== tag;
}
