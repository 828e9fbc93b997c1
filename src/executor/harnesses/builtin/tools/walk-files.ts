import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { ToolError } from "./define-tool.ts";

const SKIPPED_DIRS = new Set([".git", "node_modules"]);

/** Visits files and directories under `root` without following symlinks. */
export async function walkFiles(
  root: string,
  maxEntries: number,
  signal: AbortSignal,
  visit: (abs: string, isDir: boolean) => void,
): Promise<{ stopped: boolean }> {
  let seen = 0;
  const queue = [root];
  while (queue.length) {
    const dir = queue.shift()!;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => {
      if (dir === root) throw new ToolError(`${root} is not a readable directory`);
      return [];
    });
    for (const entry of entries) {
      if (signal.aborted || ++seen > maxEntries) return { stopped: !signal.aborted };
      const abs = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (SKIPPED_DIRS.has(entry.name)) continue;
        visit(abs, true);
        queue.push(abs);
      } else if (entry.isFile() || entry.isSymbolicLink()) {
        visit(abs, false);
      }
    }
  }
  return { stopped: false };
}
