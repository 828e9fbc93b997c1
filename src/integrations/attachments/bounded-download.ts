/**
 * Downloads one file a chat platform hosts (a Slack file, a GitHub comment image) without trusting the
 * link: every hop, redirects included, must pass `allowed` before it is requested (no request ever goes
 * to a host the integration did not choose: no SSRF), the platform's token goes only where `tokenFor`
 * says, the body stops at `maxBytes` and the whole download at `timeoutMs`.
 */

export interface DownloadPolicy {
  /** Whether a URL may be requested at all (checked again for every redirect's target). */
  allowed: (url: URL) => boolean;
  /** The Authorization header value for this URL, if it is one of the hosts that takes the token. */
  tokenFor: (url: URL) => string | undefined;
  maxBytes: number;
  timeoutMs: number;
  /** Hosts such as github.com answer with a redirect to their storage host: followed this many times. */
  maxRedirects?: number;
}

export type DownloadResult =
  | { ok: true; bytes: Uint8Array; contentType: string | undefined }
  | { ok: false; reason: "not_allowed"; url: string }
  | { ok: false; reason: "too_large" }
  | { ok: false; reason: "http"; status: number }
  | { ok: false; reason: "failed"; message: string };

const DEFAULT_MAX_REDIRECTS = 3;

export async function boundedDownload(
  url: string,
  policy: DownloadPolicy,
  fetchImpl: typeof fetch = fetch,
): Promise<DownloadResult> {
  const signal = AbortSignal.timeout(policy.timeoutMs);
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { ok: false, reason: "not_allowed", url };
  }
  try {
    for (let hop = 0; hop <= (policy.maxRedirects ?? DEFAULT_MAX_REDIRECTS); hop++) {
      if (!policy.allowed(target)) return { ok: false, reason: "not_allowed", url: target.href };
      const token = policy.tokenFor(target);
      const res = await fetchImpl(target, {
        // Redirects are followed here, one checked hop at a time, never by fetch itself.
        redirect: "manual",
        signal,
        headers: { accept: "image/*", ...(token ? { authorization: token } : {}) },
      });
      if (res.status >= 300 && res.status < 400 && res.headers.get("location")) {
        await res.body?.cancel();
        target = new URL(res.headers.get("location")!, target);
        continue;
      }
      if (!res.ok) {
        await res.body?.cancel();
        return { ok: false, reason: "http", status: res.status };
      }
      const declared = Number(res.headers.get("content-length"));
      if (Number.isFinite(declared) && declared > policy.maxBytes) {
        await res.body?.cancel();
        return { ok: false, reason: "too_large" };
      }
      const bytes = await readAtMost(res, policy.maxBytes);
      if (!bytes) return { ok: false, reason: "too_large" };
      return { ok: true, bytes, contentType: res.headers.get("content-type") ?? undefined };
    }
    return { ok: false, reason: "failed", message: "too many redirects" };
  } catch (err) {
    const message = signal.aborted ? "timed out" : err instanceof Error ? err.message : "the download failed";
    return { ok: false, reason: "failed", message };
  }
}

/** The body, or undefined as soon as it grows past `max` bytes (the rest is never read). */
async function readAtMost(res: Response, max: number): Promise<Uint8Array | undefined> {
  if (!res.body) return new Uint8Array();
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
}
