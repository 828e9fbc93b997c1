import { Agent, request } from "node:http";

/**
 * What the acknowledgement benchmarks (bench/slack, bench/github) share: kept-alive POSTs and latency
 * percentiles. Their baselines (bare-ack.ts beside each) are started with startBareServer.
 */

/** POSTs over kept-alive connections (opened by a warm-up): the benches measure answers, not TCP set-up. */
export function keepAlivePoster(maxSockets: number) {
  const agent = new Agent({ keepAlive: true, maxSockets });
  return (url: string, headers: Record<string, string>, body: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(url, { method: "POST", agent, headers }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      req.end(body);
    });
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, idx)]!;
}

export function latencySummary(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN };
}
