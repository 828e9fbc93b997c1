import autocannon from "autocannon";
import type { BenchDispatchProcess } from "../support/dispatch.ts";

/**
 * Requests per second of the three API calls bench/api measures (GET a run, list 20, create), against an
 * API process whose store holds `seed` runs created through the API. Only the API's store differs between
 * the deployments compared: nothing executes runs meanwhile (the creates stay QUEUED).
 */

export type ApiCall = "get" | "list" | "create";

export interface ApiRate {
  reqPerSec: number;
  /** Non-2xx answers, connection errors and timeouts: any makes the figure invalid. */
  failures: number;
}

const CONNECTIONS = 32;
const SEED_CONCURRENCY = 16;

export async function measureApiRates(
  api: BenchDispatchProcess,
  opts: { seed: number; seconds: number; warmupSeconds: number },
): Promise<Record<ApiCall, ApiRate>> {
  const ids = await seed(api, opts.seed);
  const auth = { authorization: `Bearer ${api.key}` };
  const runsUrl = `${api.url}/api/v1/agent/runs`;
  const scenarios: Record<
    ApiCall,
    Partial<autocannon.Options> & { url: string; perConnection?: (n: number) => autocannon.Request[] }
  > = {
    get: {
      url: runsUrl,
      headers: auth,
      // Each connection walks the stored runs from its own offset, so reads spread over the table.
      perConnection: (n) =>
        Array.from({ length: Math.min(ids.length, 200) }, (_, i) => ({
          method: "GET",
          path: `/api/v1/agent/runs/${ids[(n * 97 + i) % ids.length]}`,
        })),
    },
    list: { url: `${runsUrl}?limit=20`, headers: auth },
    // Last: every request adds a QUEUED run that the reads above should not see.
    create: {
      url: runsUrl,
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "$ echo created by the scale bench", metadata: { bench: "scale" } }),
    },
  };
  const rates = {} as Record<ApiCall, ApiRate>;
  for (const [call, scenario] of Object.entries(scenarios) as Array<[ApiCall, (typeof scenarios)[ApiCall]]>) {
    await fire(scenario, opts.warmupSeconds);
    rates[call] = await fire(scenario, opts.seconds);
  }
  return rates;
}

/** `count` runs created through the API; their ids. */
async function seed(api: BenchDispatchProcess, count: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(SEED_CONCURRENCY, count) }, async () => {
      while (next < count) {
        next += 1;
        const res = await api.api("POST", "/api/v1/agent/runs", { prompt: `Seeded run ${next}\n$ true` });
        if (res.status !== 200)
          throw new Error(`seeding: create answered ${res.status}: ${JSON.stringify(res.body)}`);
        ids.push(res.body.run_id as string);
      }
    }),
  );
  return ids;
}

function fire(
  scenario: Partial<autocannon.Options> & {
    url: string;
    perConnection?: (n: number) => autocannon.Request[];
  },
  seconds: number,
): Promise<ApiRate> {
  const { perConnection, ...options } = scenario;
  let connection = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        ...options,
        connections: CONNECTIONS,
        duration: seconds,
        ...(perConnection
          ? { setupClient: (client) => client.setRequests(perConnection(connection++)) }
          : {}),
      },
      (err, result) => {
        if (err) return reject(err);
        resolve({
          reqPerSec: result.requests.total / result.duration,
          failures: result.non2xx + result.errors + result.timeouts,
        });
      },
    );
  });
}
