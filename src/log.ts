import { createRequire } from "node:module";
import pino, { type Logger } from "pino";

/** How log lines are written: auto = pretty on a terminal (outside CI), JSON lines otherwise. */
export type LogFormat = "auto" | "json" | "pretty";

/**
 * Token shapes scrubbed from every log line, whatever field or error message carries them: Dispatch API
 * keys, Slack tokens, GitHub tokens and provider keys.
 */
const SECRET_PATTERNS =
  /\b(dsp_[A-Za-z0-9]{40}|xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,})/g;

export function scrubSecrets(text: string): string {
  // Keep the first four characters: enough to tell which kind of secret it was. A signed download link's
  // signature (logged with the request URL) is a capability too, and so is the secret in a Jira Data
  // Center webhook's URL.
  return text
    .replace(SECRET_PATTERNS, (m) => `${m.slice(0, 4)}[redacted]`)
    .replace(/([?&]signature=)[A-Za-z0-9_-]{43}/g, "$1[redacted]")
    .replace(/([?&]secret=)[^&#\s"]+/g, "$1[redacted]");
}

/**
 * JSON lines (or, on a terminal, pretty-printed lines: see prettyWanted); anything that can carry a
 * secret is redacted wherever it appears, before either format sees the line. With a `destination`
 * the lines go there as JSON unless `format` is "pretty".
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  opts: { format?: LogFormat } = {},
): Logger {
  const format = opts.format ?? "auto";
  const wantsPretty =
    format === "pretty" ||
    (format === "auto" && destination === undefined && prettyWanted(process.stdout, process.env));
  if (wantsPretty) {
    // In this process and synchronous, like the JSON destination: a crash loses no line. Only for people
    // watching a terminal; machines read the JSON.
    // Loaded only here: a server writing JSON (the usual case) never holds pino-pretty and its colours.
    const pretty = createRequire(import.meta.url)("pino-pretty") as typeof import("pino-pretty");
    destination = pretty({
      destination: destination ?? 1,
      sync: true,
      translateTime: "SYS:HH:MM:ss.l",
      ignore: "pid,hostname,service",
    });
  }
  return pino(
    {
      level,
      base: { service: "dispatch" },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          "req.headers.authorization",
          "req.headers.cookie",
          'req.headers["x-slack-signature"]',
          'req.headers["x-hub-signature-256"]',
          'req.headers["x-hub-signature"]',
          "headers.authorization",
          "*.apiKey",
          "*.api_key",
          "*.token",
          "*.secret",
          "*.password",
          "apiKey",
          "token",
        ],
        censor: "[redacted]",
      },
      serializers: { err: pino.stdSerializers.err },
      hooks: { streamWrite: scrubSecrets },
    },
    destination,
  );
}

/** A person is watching: stdout is a terminal, and no CI system (which sets CI) is capturing it. */
export function prettyWanted(stdout: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  const ci = env.CI;
  return stdout.isTTY === true && (ci === undefined || ci === "" || ci === "0" || ci === "false");
}
