#!/usr/bin/env node
import { keys } from "./cli/keys.ts";
import { serve } from "./cli/serve.ts";
import { ConfigError } from "./config.ts";

const USAGE = `Dispatch: hand work to coding agents from Slack, GitHub and HTTP.

Usage:
  dispatch serve                 start the API, workers and integrations (npm start)
  dispatch keys create|list|revoke   manage API keys on this machine's store
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      await serve();
      return -1;
    case "keys":
      return keys(rest);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err) => {
    process.stderr.write(
      `${err instanceof ConfigError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
