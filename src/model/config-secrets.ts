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
