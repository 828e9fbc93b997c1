import { realpathSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";

/**
 * An installed agent CLI as a sandbox runs it: the command to start (through the relay, which is Node)
 * and the host paths it needs to see, bound read-only at the same place. Agents ship with Dispatch's
 * dependencies (pinned in package.json); nothing is downloaded at run time.
 */
export interface AgentProgram {
  /** The program and its leading arguments (a native binary, or Node and a script). */
  command: string[];
  /** Real paths the sandbox must show read-only (the program's package, Node). */
  mounts: string[];
  /** Directories put first on the agent's PATH (tools the CLI ships, e.g. Codex's rg). */
  path: string[];
}

const require = createRequire(import.meta.url);

/** Node itself, which runs the relay (and Node-based agents) inside the sandbox. */
export function nodeExecutable(): string {
  return realpathSync(process.execPath);
}

/** The directory of an installed npm package, or undefined when it is not installed. */
export function packageDir(name: string): string | undefined {
  try {
    return realpathSync(dirname(require.resolve(`${name}/package.json`)));
  } catch {
    return undefined;
  }
}

/** `file` when it exists and is executable by its owner, else undefined. */
export function executable(file: string): string | undefined {
  try {
    const st = statSync(file);
    return st.isFile() && st.mode & 0o100 ? realpathSync(file) : undefined;
  } catch {
    return undefined;
  }
}

/** Says which package to install when a program is missing. */
export function notInstalled(label: string, pkg: string, version: string): string {
  return `${label} is not installed on this server: the ${pkg}@${version} package (with its ${process.platform}-${process.arch} binary) is missing from Dispatch's node_modules; run npm ci in Dispatch's directory`;
}
