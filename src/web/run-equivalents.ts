/**
 * The CLI and curl commands that do what the run page's buttons do, for a person to copy. They name the
 * key by its environment variable (`$DISPATCH_API_KEY`, which the CLI reads too) and never hold a key.
 */

export interface Equivalent {
  /** What the commands do, as a heading says it. */
  action: "Get" | "Follow up" | "Cancel";
  cli: string;
  curl: string;
}

/** POSIX shell single quotes: the text as one word, whatever it holds. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** Get, follow up and cancel `runId` on the Dispatch at `baseUrl` (its public URL). */
export function runEquivalents(baseUrl: string, runId: string): Equivalent[] {
  const base = baseUrl.replace(/\/+$/, "");
  const run = `${base}/api/v1/agent/runs/${encodeURIComponent(runId)}`;
  const id = shellQuote(runId);
  const env = `DISPATCH_BASE_URL=${shellQuote(base)}`;
  const auth = `-H "Authorization: Bearer $DISPATCH_API_KEY"`;
  return [
    {
      action: "Get",
      cli: `${env} dispatch get ${id}\n${env} dispatch logs ${id} --follow`,
      curl: `curl ${auth} ${shellQuote(run)}`,
    },
    {
      action: "Follow up",
      cli: `${env} dispatch followup ${id} 'your message'`,
      curl: `curl -X POST ${auth} -H 'Content-Type: application/json' \\\n  -d '{"message":"your message"}' ${shellQuote(`${run}/followups`)}`,
    },
    {
      action: "Cancel",
      cli: `${env} dispatch cancel ${id}`,
      curl: `curl -X POST ${auth} ${shellQuote(`${run}/cancel`)}`,
    },
  ];
}
