import { type LookupAddress, type LookupAllOptions, lookup as systemLookup } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Where webhooks may go (docs/api.md, "Webhooks"): a URL whose host is, or resolves to, anything but a
 * public unicast address (loopback, private, link-local, carrier-grade NAT, unique-local, multicast, …) is
 * refused unless DISPATCH_WEBHOOK_ALLOW_PRIVATE=true, and a cloud metadata address always. The check runs
 * when an endpoint is created and again as each delivery connects (`guardedLookup`), against the very
 * addresses the connection then uses, so a name that resolves elsewhere later (DNS rebinding) is caught.
 */

/** A target refused, with why; the API answers it as a 400, a delivery records it as its error. */
export class TargetRefused extends Error {}

/** Instance metadata services: they hand out cloud credentials, and no receiver of webhooks lives there. */
const METADATA = new Set(["169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200"]);

/** Why `address` may not receive webhooks, or undefined when it may. */
export function refusalOf(address: string, allowPrivate: boolean): string | undefined {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const parsed = ipaddr.process(address);
  const normal = parsed.toNormalizedString();
  if (METADATA.has(normal) || METADATA.has(parsed.toString())) {
    return `${address} is a cloud metadata address, which webhooks never reach`;
  }
  if (allowPrivate) return undefined;
  const range = parsed.range();
  if (range === "unicast") return undefined;
  return `${address} is a ${RANGE_WORDS[range] ?? `${range} address`} (set DISPATCH_WEBHOOK_ALLOW_PRIVATE=true to allow private targets)`;
}

const RANGE_WORDS: Record<string, string> = {
  loopback: "loopback address",
  private: "private address",
  linkLocal: "link-local address",
  uniqueLocal: "unique-local (private) address",
  carrierGradeNat: "carrier-grade NAT (private) address",
  unspecified: "unspecified address",
  multicast: "multicast address",
  broadcast: "broadcast address",
  reserved: "reserved address",
};

export type Resolve = (host: string) => Promise<string[]>;

/** Every address the system resolves `host` to. */
export const systemResolve: Resolve = (host) =>
  new Promise((resolve, reject) =>
    systemLookup(host, { all: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses.map((a) => a.address)),
    ),
  );

/**
 * The URL a webhook endpoint may have: http(s), no credentials in it, a host that resolves, and none of its
 * addresses refused. Throws TargetRefused saying what is wrong.
 */
export async function checkTarget(
  raw: string,
  opts: { allowPrivate: boolean; resolve?: Resolve },
): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefused(`url: "${raw.slice(0, 100)}" is not a URL; give an https:// address`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TargetRefused(`url: ${url.protocol} is not supported; give an https:// (or http://) address`);
  }
  if (url.username || url.password) {
    throw new TargetRefused(
      "url: must not carry credentials (user:password@); receivers verify the webhook-signature header instead",
    );
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await (opts.resolve ?? systemResolve)(host);
    } catch (err) {
      throw new TargetRefused(
        `url: the host ${host} could not be resolved (${(err as { code?: string }).code ?? String(err)}); check the name`,
      );
    }
  }
  for (const address of addresses) {
    const why = refusalOf(address, opts.allowPrivate);
    if (why) throw new TargetRefused(`url: ${host} is refused: ${why}`);
  }
  return url;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request that resolves as the system does and refuses the connection when an address
 * it would use is refused: the check and the connection see the same answer.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: LookupAllOptions | object, callback: LookupCallback): void => {
    systemLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      for (const { address } of addresses) {
        const why = refusalOf(address, allowPrivate);
        if (why) return callback(Object.assign(new TargetRefused(why), { code: "EREFUSEDTARGET" }), []);
      }
      if ((options as { all?: boolean }).all) return callback(null, addresses);
      const first = addresses[0]!;
      return callback(null, first.address, first.family);
    });
  };
}
