import pino, { type Logger } from "pino";

/** JSON logs; anything that can carry a secret is redacted wherever it appears. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
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
    },
    destination,
  );
}
