import { describe, expect, it } from "vitest";
import { startTestDispatch } from "../support/dispatch.ts";

describe("/readyz and free disk space", () => {
  it("answers 503 naming the setting while the data directory's filesystem has less free than the threshold", async () => {
    // 1 PiB: more than any test machine has free.
    const t = await startTestDispatch({ DISPATCH_MIN_FREE_DISK_MB: String(2 ** 30) });
    try {
      const res = await fetch(`${t.url}/readyz`);
      expect(res.status).toBe(503);
      const body = await res.json();
      expect(body.error_code).toBe("resource_unavailable");
      expect(body.detail).toMatch(
        /^only \d+ MB free on the data directory's filesystem, below DISPATCH_MIN_FREE_DISK_MB=1073741824; free disk space/,
      );
      expect(res.headers.get("retry-after")).toBeTruthy();
      // Liveness is another matter: the process is fine.
      expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    } finally {
      await t.stop();
    }
  });

  it("answers 200 with enough free space, and with the check turned off", async () => {
    for (const threshold of ["1", "0"]) {
      const t = await startTestDispatch({
        DISPATCH_MIN_FREE_DISK_MB: threshold,
        DISPATCH_MAX_CONCURRENT_RUNS: "0",
      });
      try {
        const res = await fetch(`${t.url}/readyz`);
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({
          status: "ready",
          roles: { api: "serving", worker: "idle: DISPATCH_MAX_CONCURRENT_RUNS is 0", scheduler: "firing" },
        });
      } finally {
        await t.stop();
      }
    }
  });
});
