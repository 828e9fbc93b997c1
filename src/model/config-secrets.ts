import type { McpServerConfig } from "./run.ts";

/** What every surface shows in place of a secret value of a run's config. */
export const REDACTED = "[redacted]";

/**
 * A config as people may see it: the values of its MCP servers' `env` and `headers` (the tokens those
 * servers need) replaced by REDACTED, their names kept so that one can tell which were set. Anyone who
 * can read a run (a read key, a session link, a Slack channel) would otherwise read its creator's tokens.
 * Only what is shown is redacted: the stored config keeps the values, and the executor reads those.
 */
export function withoutSecrets<T extends { mcp_servers?: Record<string, McpServerConfig> | null }>(
  config: T,
): T {
  if (!config.mcp_servers) return config;
  const servers = Object.fromEntries(
    Object.entries(config.mcp_servers).map(([name, server]) => {
      const shown: McpServerConfig = { ...server };
      if (server.env) shown.env = redactValues(server.env);
      if (server.headers) shown.headers = redactValues(server.headers);
      return [name, shown];
    }),
  );
  return { ...config, mcp_servers: servers };
}

function redactValues(values: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(values).map((key) => [key, REDACTED]));
}

/**
 * Why a config may not be taken as given: it holds REDACTED as a secret's value (a config as shown, sent
 * back), which would reach the MCP server as that text. Names the field under `prefix` (`config`,
 * `agent_config`); undefined when there is none.
 */
export function shownSecretProblem(
  config: { mcp_servers?: Record<string, McpServerConfig> | null },
  prefix: string,
): string | undefined {
  for (const [name, server] of Object.entries(config.mcp_servers ?? {})) {
    for (const field of ["env", "headers"] as const) {
      const key = Object.entries(server[field] ?? {}).find(([, value]) => value === REDACTED)?.[0];
      if (key !== undefined) {
        return `${prefix}.mcp_servers.${name}.${field}.${key}: "${REDACTED}" is how Dispatch shows a secret, not its value; give the value`;
      }
    }
  }
  return undefined;
}

/**
 * A config sent to replace a stored one, with each REDACTED value taken from the stored config where it
 * has that server and key: a client that read the config (redacted) and sends it back with a change keeps
 * the secrets it was never shown.
 */
export function withStoredSecrets<T extends { mcp_servers?: Record<string, McpServerConfig> | null }>(
  config: T,
  stored: { mcp_servers?: Record<string, McpServerConfig> | null },
): T {
  if (!config.mcp_servers) return config;
  const servers = Object.fromEntries(
    Object.entries(config.mcp_servers).map(([name, server]) => {
      const before = stored.mcp_servers?.[name];
      const kept: McpServerConfig = { ...server };
      if (server.env) kept.env = restore(server.env, before?.env);
      if (server.headers) kept.headers = restore(server.headers, before?.headers);
      return [name, kept];
    }),
  );
  return { ...config, mcp_servers: servers };
}

function restore(values: Record<string, string>, stored: Record<string, string> | undefined) {
  return Object.fromEntries(
    Object.entries(values).map(([key, value]) => [
      key,
      value === REDACTED && stored && Object.hasOwn(stored, key) ? stored[key]! : value,
    ]),
  );
}
