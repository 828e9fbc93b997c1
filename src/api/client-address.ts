import { isIPv6 } from "node:net";
import type { FastifyRequest } from "fastify";

/**
 * Who a request comes from, for limits per client that hold without a key: its address as the server's
 * trustProxy setting reads it (DISPATCH_TRUST_PROXY: X-Forwarded-For from trusted proxies only, else the
 * connection's own address). An IPv6 client is its /64, the block one subscriber is usually given, so
 * that a client cannot take a fresh limit with each of its addresses.
 */
export function clientAddress(req: FastifyRequest): string {
  return addressKey(req.ip);
}

/** An IPv4 address as it is; an IPv6 one as its /64 (an IPv4-mapped one as the IPv4 address). */
export function addressKey(ip: string): string {
  if (!isIPv6(ip)) return ip;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  return `${ipv6Groups(ip.split("%")[0]!).slice(0, 4).join(":")}::/64`;
}

/** The eight groups of an IPv6 address, `::` expanded and leading zeros dropped (an embedded IPv4 tail is two). */
function ipv6Groups(ip: string): string[] {
  const [head = "", tail] = ip.split("::");
  const split = (part: string) =>
    part === ""
      ? []
      : part.split(":").flatMap((group) => {
          if (!group.includes(".")) return [group];
          const [a, b, c, d] = group.split(".").map(Number) as [number, number, number, number];
          return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
        });
  const first = split(head);
  const last = tail === undefined ? [] : split(tail);
  const zeros = Array.from({ length: 8 - first.length - last.length }, () => "0");
  return [...first, ...zeros, ...last].map((group) => Number.parseInt(group, 16).toString(16));
}
