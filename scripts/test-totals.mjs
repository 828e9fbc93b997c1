// Prints one "tests: N passed, N failed, N skipped" line for the vitest JSON report and the pytest
// JUnit XML reports given as arguments, so the test command ends with a single closing line.
import { existsSync, readFileSync } from "node:fs";

// --label NAME names the line (default "tests").
const args = process.argv.slice(2);
const label = args[0] === "--label" ? args.splice(0, 2)[1] : "tests";
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of args) {
  if (!existsSync(file)) continue;
  const text = readFileSync(file, "utf8");
  if (file.endsWith(".json")) {
    const r = JSON.parse(text);
    passed += r.numPassedTests;
    failed += r.numFailedTests;
    skipped += r.numPendingTests + r.numTodoTests;
    continue;
  }
  // pytest's JUnit XML: <testsuite ... tests="N" failures="N" errors="N" skipped="N">
  for (const m of text.matchAll(/<testsuite\b([^>]*)>/g)) {
    const attr = (name) => Number(new RegExp(`\\b${name}="(\\d+)"`).exec(m[1])?.[1] ?? 0);
    const bad = attr("failures") + attr("errors");
    passed += attr("tests") - bad - attr("skipped");
    failed += bad;
    skipped += attr("skipped");
  }
}
console.log(`${label}: ${passed} passed, ${failed} failed, ${skipped} skipped`);
