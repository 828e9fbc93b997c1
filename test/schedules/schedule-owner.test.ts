import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";

/**
 * Whom a schedule's runs are for (docs/api.md): its creator, until another member replaces it (PUT) or
 * resumes it while paused — who then owns it, shown as its created_by — so nobody's runs carry a prompt
 * they did not write. Pausing changes no owner. A live Dispatch with no executor slots (runs stay QUEUED
 * and show whom they are for) and a scheduler on a test clock.
 */
let clock = Date.parse("2030-01-01T00:00:10.000Z");
const at = (iso: string) => {
  clock = Date.parse(iso);
};

let t: TestDispatch;
let alice: string;
let bob: string;
const base = "/api/v1/agent/schedules";
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const ALICE = { type: "user", display_name: "Alice" };
const BOB = { type: "user", display_name: "Bob" };

beforeAll(async () => {
  t = await startTestDispatch(
    { DISPATCH_MAX_CONCURRENT_RUNS: "0", DISPATCH_SCHEDULES_PER_CREATOR: "2" },
    { scheduler: { now: () => clock, maxSleepMs: 50 } },
  );
  alice = await t.newKey("team_default", { displayName: "Alice" });
  bob = await t.newKey("team_default", { displayName: "Bob" });
});
afterAll(async () => {
  await t?.stop();
});

const spec = (name: string, prompt: string, over: Record<string, unknown> = {}) => ({
  name,
  cron_schedule: "* * * * *",
  enabled: true,
  prompt,
  ...over,
});

describe("schedule owner", () => {
  it("a member who replaces another's schedule owns it: the next run is theirs, never the creator's", async () => {
    const created = await t.api("POST", base, spec("nightly-report", "$ echo alice's prompt"), as(alice));
    expect(created.status).toBe(201);
    expect(created.body.created_by).toMatchObject(ALICE);

    const put = await t.api(
      "PUT",
      `${base}/${created.body.id}`,
      spec("nightly-report", "$ echo bob's prompt"),
      as(bob),
    );
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ created_by: BOB, updated_by: BOB, prompt: "$ echo bob's prompt" });

    at("2030-01-01T00:01:00.000Z");
    const [run] = await waitFor(async () => {
      const res = await t.api(
        "GET",
        `/api/v1/agent/runs?schedule_id=${created.body.id}`,
        undefined,
        as(alice),
      );
      return res.body.runs.length > 0 ? (res.body.runs as Array<Record<string, unknown>>) : undefined;
    });
    expect(run).toMatchObject({ prompt: "$ echo bob's prompt", creator: BOB });
    await t.api("POST", `${base}/${created.body.id}/pause`, {});
  });

  it("pausing changes no owner; resuming someone else's paused schedule makes it yours", async () => {
    const { body: s } = await t.api("POST", base, spec("weekly-digest", "$ echo digest"), as(alice));
    const paused = await t.api("POST", `${base}/${s.id}/pause`, {}, as(bob));
    expect(paused.body).toMatchObject({ enabled: false, created_by: ALICE, updated_by: BOB });
    // Alice resumes her own schedule: still hers.
    const own = await t.api("POST", `${base}/${s.id}/resume`, {}, as(alice));
    expect(own.body).toMatchObject({ enabled: true, created_by: ALICE });
    // Resuming one that runs already changes nothing, whoever asks.
    expect((await t.api("POST", `${base}/${s.id}/resume`, {}, as(bob))).body.created_by).toMatchObject(ALICE);
    await t.api("POST", `${base}/${s.id}/pause`, {}, as(alice));
    const resumed = await t.api("POST", `${base}/${s.id}/resume`, {}, as(bob));
    expect(resumed.body).toMatchObject({ enabled: true, created_by: BOB, updated_by: BOB });
    await t.api("POST", `${base}/${s.id}/pause`, {}, as(bob));
  });

  it("refuses a change that would make the editor own more schedules than their limit", async () => {
    const { body: s } = await t.api(
      "POST",
      base,
      spec("admin-schedule", "$ echo the admin's", { enabled: false }),
    );
    // Bob owns two already (the two above), the most DISPATCH_SCHEDULES_PER_CREATOR=2 allows.
    const refused = await t.api("PUT", `${base}/${s.id}`, spec("admin-schedule", "$ echo bob's"), as(bob));
    expect(refused.status).toBe(403);
    expect(refused.body.error_code).toBe("not_authorized");
    expect(refused.body.detail).toContain("would make the schedule's runs yours");
    expect(refused.body.detail).toContain("DISPATCH_SCHEDULES_PER_CREATOR");
    const unchanged = await t.api("GET", `${base}/${s.id}`);
    expect(unchanged.body).toMatchObject({
      prompt: "$ echo the admin's",
      enabled: false,
      created_by: { uid: "admin" },
    });
  });
});
