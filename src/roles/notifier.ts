import type { Logger } from "pino";
import type { Metrics } from "../api/metrics.ts";
import type { Config } from "../config.ts";
import { DEFAULT_NOTIFIER_OPTIONS, Notifier, type NotifierOptions } from "../notifier/notifier.ts";
import type { RunsApi } from "../runs/runs-api.ts";
import type { Store } from "../store/store.ts";
import type { Surface } from "../surfaces/surface.ts";

/**
 * The notifier role: reports each run to the surface its thread is bound to, through the platforms the
 * surfaces lend it; none when no surface reports here.
 */
export async function startNotifier(deps: {
  config: Config;
  log: Logger;
  store: Store;
  /** The notifier's RunsApi, asked for only when there is something to report to (it makes its account). */
  runsApi: () => Promise<RunsApi>;
  surfaces: Iterable<Surface>;
  metrics: Metrics;
  options?: Partial<NotifierOptions>;
}): Promise<Notifier | undefined> {
  const platforms = [...deps.surfaces].flatMap((surface) => (surface.notifier ? [surface.notifier] : []));
  if (platforms.length === 0) return undefined;
  const notifier = new Notifier({
    runsApi: await deps.runsApi(),
    store: deps.store,
    platforms,
    log: deps.log,
    options: { ...DEFAULT_NOTIFIER_OPTIONS, stallAfterMs: deps.config.stallAfterMs, ...deps.options },
    onDelivery: (kind, outcome) => deps.metrics.notifierDeliveries.inc({ kind, outcome }),
  });
  notifier.start();
  return notifier;
}
