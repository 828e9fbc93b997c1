import { appendFileSync } from "node:fs";
import { registerHooks } from "node:module";

/**
 * Loaded with `node --import` before Dispatch: appends the URL of every module the process loads (by
 * `import` or `require`) to the file named by DISPATCH_TEST_MODULE_LOG, one a line, as it is loaded — so
 * a test reads what a `dispatch serve` has loaded at any moment.
 */
const logFile = process.env.DISPATCH_TEST_MODULE_LOG;
if (logFile) {
  registerHooks({
    load(url, context, nextLoad) {
      appendFileSync(logFile, `${url}\n`);
      return nextLoad(url, context);
    },
  });
}
