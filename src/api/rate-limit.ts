/**
 * Token buckets per key: per API key on the API (docs/api.md: 1,200 requests a minute, bursts of 200), per
 * client address for sign-in. Kept in memory: each replica limits what it serves, which bounds a key at
 * replicas × rate — the point is protecting the service from one runaway client, not billing.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;
  private readonly burst: number;
  private readonly maxKeys: number;

  /**
   * `maxKeys` bounds the table where anyone may add keys (addresses): once it is full of clients that are
   * not idle, further new clients share one bucket until some are idle again, so the table stays bounded
   * and nobody's bucket is reset by a crowd of new ones.
   */
  constructor(perMinute: number, burst: number, maxKeys = Number.POSITIVE_INFINITY) {
    this.perMs = perMinute / 60_000;
    this.burst = burst;
    this.maxKeys = maxKeys;
  }

  /** Takes one token; returns 0 when allowed, else the seconds to wait before the next is available. */
  take(key: string, now = Date.now()): number {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.forgetIdle(now);
      const room = this.buckets.size < this.maxKeys;
      bucket = (room ? undefined : this.buckets.get(OVERFLOW)) ?? { tokens: this.burst, at: now };
      this.buckets.set(room ? key : OVERFLOW, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000));
  }

  /** Drops the buckets that have refilled: their clients start afresh at the same burst anyway. */
  private forgetIdle(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * this.perMs >= this.burst) this.buckets.delete(key);
    }
  }
}

/** The bucket that new clients share while the table is full. */
const OVERFLOW = "\0overflow";
