import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";

/**
 * Where the browser tests save their screenshots: test-results/screenshots/, or the README's
 * docs/screenshots/ when scripts/screenshots runs them (DISPATCH_SCREENSHOTS_DIR).
 */
export const SCREENSHOTS_DIR =
  process.env.DISPATCH_SCREENSHOTS_DIR ??
  fileURLToPath(new URL("../../test-results/screenshots/", import.meta.url));

/** A screenshot of what the page shows in its viewport (the README's pictures), saved as `name`. */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOTS_DIR, { recursive: true });
  const path = join(SCREENSHOTS_DIR, name);
  await page.screenshot({ path });
  return path;
}
