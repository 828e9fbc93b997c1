import type { Sandbox } from "../../../sandbox/sandbox.ts";
import type { SandboxFiles } from "./sandbox-files.ts";
import type { WorkspacePaths } from "./workspace-paths.ts";

export interface ToolLimits {
  /** Characters of tool output the model receives. */
  outputChars: number;
  /** Default and maximum shell command timeout. */
  commandTimeoutMs: number;
  maxCommandTimeoutMs: number;
  /** Largest file read_file/search_files look at. */
  maxFileBytes: number;
  /** Entries a directory walk visits before it stops. */
  maxWalkEntries: number;
}

export const DEFAULT_TOOL_LIMITS: ToolLimits = {
  outputChars: 30_000,
  commandTimeoutMs: 2 * 60_000,
  maxCommandTimeoutMs: 10 * 60_000,
  maxFileBytes: 5 * 1024 * 1024,
  maxWalkEntries: 20_000,
};

/** What every tool of a run is built with. */
export interface ToolContext {
  sandbox: Sandbox;
  /** The run's signal: aborts commands and directory walks. */
  signal: AbortSignal;
  limits: ToolLimits;
  paths: WorkspacePaths;
  /** File reads, writes and walks, done inside the sandbox. */
  files: SandboxFiles;
}
