import { mkdir, readFile, realpath, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Suffix of a run's private area next to its workspace (workspace-retention.ts removes it with it). */
export const AGENT_AREA_SUFFIX = ".agent";

/**
 * An external agent's private area: `<workspace>.agent`, beside the run's workspace, never inside it (so
 * nothing of it is committed or delivered), kept across the run's executions and removed with its
 * workspace. `home` is the agent's HOME (its config, caches and session files: what a resume needs);
 * `sessions.json` remembers each agent's session id.
 */
export interface AgentArea {
  /** Real path of the area. */
  root: string;
  home: string;
}

export async function prepareAgentArea(workspace: string): Promise<AgentArea> {
  const root = `${await realpath(workspace)}${AGENT_AREA_SUFFIX}`;
  await mkdir(join(root, "home"), { recursive: true, mode: 0o700 });
  return { root, home: join(root, "home") };
}

/** The session id the agent `type` left in this run's area, if any. */
export async function savedSession(area: AgentArea, type: string): Promise<string | undefined> {
  const id = (await readSessions(area))[type];
  return typeof id === "string" && id !== "" ? id : undefined;
}

export async function saveSession(area: AgentArea, type: string, id: string): Promise<void> {
  const sessions = { ...(await readSessions(area)), [type]: id };
  const file = join(area.root, "sessions.json");
  // Written whole, then renamed: a crash never leaves half a file.
  await writeFile(`${file}.tmp`, JSON.stringify(sessions), { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

async function readSessions(area: AgentArea): Promise<Record<string, unknown>> {
  try {
    const parsed: unknown = JSON.parse(await readFile(join(area.root, "sessions.json"), "utf8"));
    return parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
