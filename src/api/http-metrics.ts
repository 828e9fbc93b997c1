import type { Registry } from "prom-client";

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** One route and method's requests: counts by status, and the latency histogram's buckets, sum and count. */
interface Series {
  method: string;
  route: string;
  byStatus: Map<number, { value: number }>;
  /** Observations per bucket (not cumulative), the last one past every bound. */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * `dispatch_http_requests_total` and `dispatch_http_request_duration_seconds`, kept as plain numbers per
 * (route, method) and turned into prom-client's values only when /metrics is scraped. prom-client's own
 * Counter and Histogram check and hash their labels on every inc and observe, even through a child from
 * `labels()`: a few percent of a GET's CPU. The exposition is the same: prom-client's registry formats
 * both from the values below, as it formats its own metrics.
 */
export class HttpMetrics {
  private readonly series = new Map<string, Map<string, Series>>();
  /** The histograms' series and the counters, each in the order first seen: the order they are listed in. */
  private histograms: Series[] = [];
  private counters: Array<{ labels: { method: string; route: string; status: string }; value: number }> = [];

  constructor(registry: Registry) {
    registry.registerMetric(
      this.metric(
        "dispatch_http_requests_total",
        "HTTP requests served, by route and status.",
        "counter",
        () => this.counters.map(({ labels, value }) => ({ labels, value })),
      ),
    );
    const name = "dispatch_http_request_duration_seconds";
    registry.registerMetric(
      this.metric(name, "HTTP request latency.", "histogram", () =>
        this.histograms.flatMap((s) => {
          const labels = { method: s.method, route: s.route };
          let below = 0;
          const buckets = BUCKETS.map((le, i) => {
            below += s.buckets[i]!;
            return { metricName: `${name}_bucket`, labels: { le, ...labels }, value: below };
          });
          return [
            ...buckets,
            { metricName: `${name}_bucket`, labels: { le: "+Inf", ...labels }, value: s.count },
            { metricName: `${name}_sum`, labels, value: s.sum },
            { metricName: `${name}_count`, labels, value: s.count },
          ];
        }),
      ),
    );
  }

  /** Counts one answered request and its latency. */
  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.series.set(route, byMethod);
    }
    let s = byMethod.get(method);
    if (!s) {
      s = {
        method,
        route,
        byStatus: new Map(),
        buckets: new Array(BUCKETS.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      byMethod.set(method, s);
      this.histograms.push(s);
    }
    let counter = s.byStatus.get(status);
    if (!counter) {
      const entry = { labels: { method, route, status: String(status) }, value: 0 };
      this.counters.push(entry);
      counter = entry;
      s.byStatus.set(status, counter);
    }
    counter.value += 1;
    let bucket = 0;
    while (bucket < BUCKETS.length && seconds > BUCKETS[bucket]!) bucket++;
    s.buckets[bucket]! += 1;
    s.sum += seconds;
    s.count += 1;
  }

  /** A metric as prom-client's registry reads one (what its own metrics' get() return). */
  private metric(name: string, help: string, type: "counter" | "histogram", values: () => unknown[]) {
    const get = async () => ({ name, help, type, values: values(), aggregator: "sum" as const });
    return {
      name,
      help,
      type,
      get,
      reset: () => {
        this.series.clear();
        this.histograms = [];
        this.counters = [];
      },
    } as unknown as Parameters<Registry["registerMetric"]>[0];
  }
}
