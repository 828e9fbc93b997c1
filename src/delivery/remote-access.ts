import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { gitHostAllowed, isGitHubRepository } from "../model/repository.ts";

/** Resolves a host name to every address it has (node:dns's lookup with `all`). */
export type Lookup = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

/** What the operator lets runs' repositories be: the settings the access check reads. */
export interface RemotePolicy {
  /** `git.allowed_hosts`: the hosts a run may name by https:// URL (besides owner/repo). */
  allowedHosts: readonly string[];
  lookup: Lookup;
}

export type RemoteAccess =
  /** `gitConfig`: `-c` options for every git command that reaches the remote. */
  | { ok: true; gitConfig: string[] }
  /** `detail` is for Dispatch's log only: what the run's creator sees says nothing of the network. */
  | { ok: false; detail: string };

/**
 * Addresses Dispatch never connects to on a run's behalf: this machine, private and shared networks,
 * link-local (cloud metadata services live there: 169.254.169.254, fd00:ec2::254), multicast, reserved,
 * and the IPv6 ranges that embed an IPv4 address (NAT64, 6to4, Teredo). IPv4-mapped IPv6 addresses are
 * checked against the IPv4 ranges.
 */
const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 32],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, "ipv6");
}

/** Whether `address` is one Dispatch may connect to for a run's repository. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !NOT_PUBLIC.check(address, family === 4 ? "ipv4" : "ipv6");
}

/**
 * How Dispatch's own git may reach a run's repository, checked right before each time it does (the fetch,
 * the push). A repository on GITHUB_SERVER_URL (owner/repo) or a file:// one (allowed at create only when
 * DISPATCH_ALLOW_FILE_REMOTES is set) is the operator's own server: reached as configured. Any other is a
 * URL the run's creator chose, so it must be https on a host the operator allows, every address its name
 * resolves to now must be public, and git is pinned to exactly those addresses (no second lookup a DNS
 * answer could change in between) with redirects off (no hop to another host).
 */
export async function remoteAccess(
  target: { repository: string; remote: string },
  policy: RemotePolicy,
): Promise<RemoteAccess> {
  if (isGitHubRepository(target.repository) || target.remote.startsWith("file:")) {
    return { ok: true, gitConfig: [] };
  }
  let url: URL;
  try {
    url = new URL(target.remote);
  } catch {
    return { ok: false, detail: `not a URL: ${target.remote}` };
  }
  if (url.protocol !== "https:") return { ok: false, detail: `${url.protocol} remotes are not allowed` };
  if (!gitHostAllowed(url, policy.allowedHosts)) {
    return { ok: false, detail: `${url.host} is not in git.allowed_hosts` };
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await policy.lookup(host)).map((a) => a.address);
  } catch (err) {
    return {
      ok: false,
      detail: `${host} did not resolve: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  const refused = addresses.filter((a) => !isPublicAddress(a));
  if (addresses.length === 0 || refused.length > 0) {
    return {
      ok: false,
      detail: `${host} resolves to ${addresses.join(", ") || "nothing"}; not public: ${refused.join(", ")}`,
    };
  }
  const port = url.port || "443";
  const pinned = addresses.map((a) => (isIP(a) === 6 ? `[${a}]` : a)).join(",");
  return {
    ok: true,
    gitConfig: ["-c", `http.curloptResolve=${host}:${port}:${pinned}`, "-c", "http.followRedirects=false"],
  };
}
