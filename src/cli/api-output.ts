import { APIConnectionError, APIError, Dispatch, DispatchError } from "@agent-dispatch/client";

/** A mistake in the command line: printed with the usage, exit 2. */
export class UsageError extends Error {}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** The client the API commands use: DISPATCH_BASE_URL, and DISPATCH_API_KEY or DISPATCH_ADMIN_API_KEY. */
export function apiClient(): Dispatch {
  return new Dispatch({
    apiKey: process.env.DISPATCH_API_KEY || process.env.DISPATCH_ADMIN_API_KEY || undefined,
  });
}

/** API errors print the problem's message (not a stack) and exit 1; usage errors print `usage`, exit 2. */
export function reportApiError(err: unknown, usage: string): number {
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
    const message = (err as Error).message;
    process.stderr.write(`${message ? `${message}\n\n` : ""}Usage:\n${usage}\n`);
    return EXIT_USAGE;
  }
  if (err instanceof APIConnectionError) {
    const base = process.env.DISPATCH_BASE_URL || "http://127.0.0.1:8080";
    process.stderr.write(`dispatch: ${err.message} Is the server at ${base} up? (DISPATCH_BASE_URL)\n`);
    return EXIT_FAILED;
  }
  if (err instanceof APIError) {
    const message = err.problem?.error ?? err.message;
    const code = err.code ? ` ${err.code}` : "";
    process.stderr.write(`dispatch: ${message} (HTTP ${err.status ?? "?"}${code})\n`);
    return EXIT_FAILED;
  }
  if (err instanceof DispatchError) {
    process.stderr.write(`dispatch: ${err.message}\n`);
    return EXIT_FAILED;
  }
  throw err;
}

export function printJSON(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n")
    .concat("\n");
}
