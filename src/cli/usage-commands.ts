/**
 * Usage of `dispatch usage`, apart from its implementation (src/cli/usage.ts) so that loading the CLI
 * does not load the client.
 */
export const USAGE_REPORT_USAGE = `  dispatch usage [--from D] [--to D] [--by K,…] [--csv | --json]
                                 spend in a period, from D (a date or RFC 3339 time; default: the first
                                 of the month) to D (exclusive; default now), by any of person,
                                 repository, channel, schedule, model; only the runs your key sees`;
