import { networkInterfaces } from "node:os";

/** The programs that give a sandbox a network of its own (found on PATH at start-up). */
export interface OwnNetworkTools {
  slirp4netns: string;
  nft: string;
}

/** slirp4netns's DNS forwarder inside the sandbox (resolv.conf names it): the one private address allowed. */
export const SANDBOX_DNS = "10.0.2.3";

/**
 * IPv4 destinations a sandbox's own network never reaches: every range that is not the public internet
 * (RFC 6890's special-purpose registry: this network, private, shared CGNAT, loopback, link-local with
 * the clouds' metadata service at 169.254.169.254, IETF protocol assignments, documentation ranges that
 * some infrastructures use privately, benchmarking, multicast, reserved and broadcast), slirp4netns's
 * own 10.0.2.0/24 (its alias of the host, 10.0.2.2) included.
 */
const NOT_PUBLIC_IPV4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/3",
];

/** The host's own IPv4 addresses (its public ones too): a service listening on any of them is the host's. */
export function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a !== undefined && a.family === "IPv4")
    .map((a) => a!.address);
}

/**
 * The nftables ruleset loaded into a sandbox's network namespace before its network comes up: outbound
 * traffic reaches the public internet only. Its own loopback stays open, and DNS to slirp4netns's
 * forwarder (which relays to the host's resolver); everything to the host's own addresses or to a
 * non-public range is rejected at once ("No route to host"). IPv6 is not enabled in the sandbox
 * (slirp4netns without --enable-ipv6) and rejected as well, so no IPv6 range (ULA, link-local) is reachable.
 * The agent has no capability in its namespace, so it cannot change these rules.
 */
export function outboundFilter(host: readonly string[]): string {
  const blocked = [...new Set([...NOT_PUBLIC_IPV4, ...host])];
  return `table inet dispatch_sandbox {
  chain output {
    type filter hook output priority filter; policy accept;
    oifname "lo" accept
    ip daddr ${SANDBOX_DNS} meta l4proto { tcp, udp } th dport 53 accept
    meta nfproto ipv6 reject with icmpx type admin-prohibited
    ip daddr { ${blocked.join(", ")} } reject with icmpx type admin-prohibited
  }
}
`;
}

/**
 * Gives the sandbox a network of its own: starts bwrap (the rest of the argv) with `--info-fd 3
 * --block-fd 4` wired to a coprocess that reads the sandbox's pid, loads `filter` (outboundFilter) into
 * its network namespace, then attaches slirp4netns to it (outbound connections through the host's stack,
 * the host's loopback refused) and lets bwrap go on once the network is up. No network without the
 * filter: if nft or slirp4netns fails, the command runs without the network and says why. slirp4netns
 * stays in the run's process group and cgroup, so it ends with the command.
 */
export function ownNetworkLauncher(tools: OwnNetworkTools, filter: string): string[] {
  const script = `slirp=$1 nft=$2 filter=$3; shift 3; exec 5>&1
coproc NET {
  pid=""
  while IFS= read -r line; do case $line in *'"child-pid"'*) pid=\${line//[!0-9]/}; break ;; esac; done
  [ -n "$pid" ] || exit 0
  # bwrap brings the sandbox's lo up itself once it has told the pid; slirp4netns must not race it.
  for _ in $(seq 500); do grep -qs 127.0.0.1 "/proc/$pid/net/fib_trie" && break; sleep 0.01; done
  exec 6>&1 1>&5
  if ! err=$(printf '%s' "$filter" | nsenter --target "$pid" --net "$nft" -f - 2>&1); then
    echo "dispatch: the sandbox has no network for this command: its outbound filter could not be loaded (nft): $(echo $err)" >&2
    exit 0
  fi
  err=$("$slirp" --configure --mtu=65520 --disable-host-loopback --ready-fd=6 --netns-type=path "/proc/$pid/ns/net" tap0 2>&1 >/dev/null)
  status=$?
  exec 6>&-
  [ "$status" -lt 128 ] || exit 0
  echo "dispatch: the sandbox has no network for this command: slirp4netns failed: $(echo $err)" >&2
}
# Reopened, not dup'ed: bash closes duplicates of a coprocess's fds when it execs.
exec 3>"/proc/self/fd/\${NET[1]}" 4<"/proc/self/fd/\${NET[0]}"
exec "$@"`;
  return ["bash", "-c", script, "dispatch-network", tools.slirp4netns, tools.nft, filter];
}
