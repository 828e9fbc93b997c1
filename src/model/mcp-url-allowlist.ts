/**
 * Whether `url` (an MCP server a run names) is one the operator allows (`mcp.allowed_urls`). Dispatch
 * itself connects to such a server, from its own network position, so the run's creator must not pick
 * the address. An allowed entry is an origin (`https://mcp.example.com`: any path there) or an origin
 * with a path (`https://example.com/mcp`: that path and below it). Scheme, host and port must match
 * exactly, so `https://mcp.example.com.evil.net` or `http://…` do not pass for `https://mcp.example.com`.
 */
export function mcpUrlAllowed(url: string, allowed: readonly string[]): boolean {
  const target = parse(url);
  if (!target) return false;
  return allowed.some((entry) => {
    const base = parse(entry);
    if (!base || base.origin !== target.origin) return false;
    if (base.pathname === "/" || target.pathname === base.pathname) return true;
    return target.pathname.startsWith(base.pathname.endsWith("/") ? base.pathname : `${base.pathname}/`);
  });
}

function parse(url: string): URL | undefined {
  try {
    const parsed = new URL(url);
    return parsed.origin === "null" ? undefined : parsed;
  } catch {
    return undefined;
  }
}
