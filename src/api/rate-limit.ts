/**
 * Per-key token bucket (API.md: 1,200 requests per minute, bursts up to 200). Kept in memory: each
 * replica limits what it serves, which bounds a key at replicas × rate — the point is protecting the
 * service from one runaway client, not billing.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;
  private readonly burst: number;

  constructor(perMinute: number, burst: number) {
    this.perMs = perMinute / 60_000;
    this.burst = burst;
  }

  /** Takes one token; returns 0 when allowed, else the seconds to wait before the next is available. */
  take(key: string, now = Date.now()): number {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000));
  }
}
