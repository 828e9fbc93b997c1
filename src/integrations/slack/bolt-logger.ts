import { LogLevel, type Logger as SlackLogger } from "@slack/bolt";
import type { Logger } from "pino";

/** Bolt and the Slack app's Web API client, logging through the service's pino logger. */
export function boltLogger(log: Logger): SlackLogger {
  let level: LogLevel = LogLevel.WARN;
  const fmt = (msg: unknown[]) => msg.map((m) => (typeof m === "string" ? m : JSON.stringify(m))).join(" ");
  return {
    debug: (...msg) => log.debug(fmt(msg)),
    info: (...msg) => log.info(fmt(msg)),
    warn: (...msg) => log.warn(fmt(msg)),
    error: (...msg) => log.error(fmt(msg)),
    setLevel: (l) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => {},
  };
}
