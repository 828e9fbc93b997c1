/**
 * `npm run bench:failover`: both failover benches in turn, each in a child process of its own —
 * checkpoint.ts (what a checkpoint costs per step) and failover.ts (how long a run waits for another
 * worker after its own was killed or stopped). The second runs even when the first fails; exits 1 when
 * either did. `npm run bench` runs them as two entries of its own (bench/run-all.ts).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const BENCHES = ["checkpoint.ts", "failover.ts"];

function run(script: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [fileURLToPath(new URL(script, import.meta.url))], {
      stdio: "inherit",
    });
    child.once("exit", (code) => resolve(code ?? 1));
    child.once("error", (err) => {
      process.stderr.write(`${script}: could not start: ${err.message}\n`);
      resolve(1);
    });
  });
}

let failed = 0;
for (const script of BENCHES) if ((await run(script)) !== 0) failed += 1;
process.exit(failed === 0 ? 0 : 1);
