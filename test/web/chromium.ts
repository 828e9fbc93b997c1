import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/**
 * The browser the web app's browser tests drive: Debian's Chromium package through playwright-core (no
 * browser download). In CI a missing browser is a failure; on a developer machine the browser tests are
 * skipped with a message saying how to enable them.
 */
export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const haveChromium = existsSync(CHROMIUM);
export const runBrowserTests = haveChromium || Boolean(process.env.CI);

/** Says, once per test file, that its browser tests are skipped and how to run them. */
export function warnIfSkipped(what: string): void {
  if (!runBrowserTests) {
    console.warn(
      `${what} SKIPPED: ${CHROMIUM} not found (apt-get install -y chromium); they fail instead when CI is set`,
    );
  }
}

/** Launches Chromium, or throws what CI must install. */
export async function launchChromium(): Promise<Browser> {
  if (!haveChromium) {
    throw new Error(
      `${CHROMIUM} is missing: CI must install it (apt-get install -y --no-install-recommends chromium)`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}
