import { describe, expect, it } from "vitest";
import type { RunRecord } from "../../../src/model/run.ts";
import { RUN_STATES, type RunState } from "../../../src/model/run-state.ts";
import type { Store } from "../../../src/store/store.ts";
import { newAttachment, PNG_1x1 } from "../../attachments/images.ts";
import { type StoreSuite, W, waitPast } from "./suite.ts";

export function runsConformance(t: StoreSuite): void {
  const { create, runIn } = t;

  it("creates a QUEUED run with a state event, visible only to its team", async () => {
    const run = await create({ metadata: { a: "b" } });
    const got = await t.store.getRun("t1", run.id);
    expect(got).toMatchObject({ id: run.id, state: "QUEUED", metadata: { a: "b" }, execution: 1 });
    expect(await t.store.getRun("t2", run.id)).toBeUndefined();
    expect(await t.store.getRunBySession(run.sessionId)).toMatchObject({ id: run.id });
    const events = await t.store.listEvents(run.id, 0, 10);
    expect(events).toEqual([
      expect.objectContaining({ seq: 1, type: "state", data: { state: "QUEUED", previous: null } }),
    ]);
  });

  describe("the created record is the row as stored, without reading it back", () => {
    const variants: Array<[string, Partial<RunRecord>]> = [
      ["a plain run", {}],
      [
        "every optional column set",
        {
          metadata: { a: "b" },
          triggerUrl: "https://github.com/o/r/issues/1#issuecomment-2",
          agentConfig: {
            name: "n",
            model_id: "m",
            environment_id: "e",
            skill_spec: "o/r:s",
            max_run_minutes: 3,
          },
          agentSkill: { name: "s", description: "d", full_path: "o/r/s/SKILL.md" },
          artifacts: [{ artifact_type: "ISSUE", created_at: "2026-01-01T00:00:00.000Z", data: { url: "u" } }],
          mode: "plan",
          schedule: {
            scheduleId: "s1",
            scheduleName: "nightly",
            cronSchedule: "0 3 * * *",
            fireTime: "2026-01-01T03:00:00.000Z",
          },
        },
      ],
      ["a mode given as normal", { mode: "normal" }],
    ];
    for (const [name, over] of variants) {
      it(`${name}: createRun's record equals getRun's`, async () => {
        const result = await t.store.createRun(t.newRun(over));
        if (result.kind !== "created") throw new Error("not created");
        expect(result.value).toStrictEqual(await t.store.getRun("t1", result.value.id));
      });
    }

    it("with a parent, an idempotency key, an attachment and an endpoint taking run.created", async () => {
      const root = await create();
      await t.store.createWebhookEndpoint({
        id: "wh_created_record",
        teamId: "t1",
        url: "https://hooks.example.com/created",
        events: ["run.created"],
        description: null,
        secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
        createdBy: "u1",
        createdAt: new Date().toISOString(),
      });
      const claim = {
        principalId: "p1",
        key: "created-record",
        requestHash: "h",
        respond: (value: unknown) => ({ run_id: (value as RunRecord).id }),
        notBefore: new Date(Date.now() - 60_000).toISOString(),
      };
      const run = t.newRun({ parentRunId: root.id, rootRunId: root.id });
      const result = await t.store.createRun(run, claim, [newAttachment("a.png", PNG_1x1)]);
      if (result.kind !== "created") throw new Error("not created");
      expect(result.value).toStrictEqual(await t.store.getRun("t1", run.id));
    });
  });

  it("counts the QUEUED and INPROGRESS runs of every team, up to the bound asked for", async () => {
    for (const state of ["INPROGRESS", "SUCCEEDED", "BLOCKED", "CANCELLED", "QUEUED", "QUEUED"] as const) {
      await runIn(state);
    }
    await create({ teamId: "t2" });
    expect(await t.store.countActiveRuns(100)).toBe(4);
    expect(await t.store.countActiveRuns(3)).toBe(3);
    expect(await t.store.countActiveRuns(1)).toBe(1);
  });

  describe("transitions are compare-and-set on the current state", () => {
    const cases: Array<{ trigger: Parameters<Store["transition"]>[1]; from: RunState[]; to: RunState }> = [
      { trigger: "succeed", from: ["INPROGRESS"], to: "SUCCEEDED" },
      { trigger: "fail", from: ["INPROGRESS"], to: "FAILED" },
      { trigger: "error", from: ["INPROGRESS"], to: "ERROR" },
      { trigger: "cancel", from: ["QUEUED", "INPROGRESS", "BLOCKED"], to: "CANCELLED" },
      { trigger: "block", from: ["INPROGRESS"], to: "BLOCKED" },
      { trigger: "answer", from: ["BLOCKED"], to: "INPROGRESS" },
      { trigger: "handoff", from: ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"], to: "QUEUED" },
      { trigger: "requeue", from: ["INPROGRESS"], to: "QUEUED" },
    ];
    for (const { trigger, from, to } of cases) {
      for (const state of RUN_STATES) {
        const allowed = from.includes(state);
        it(`${trigger} from ${state} is ${allowed ? `applied (→ ${to})` : "refused"}`, async () => {
          const run = await runIn(state);
          const result = await t.store.transition(run.id, trigger);
          const after = await t.store.getRun("t1", run.id);
          if (allowed) {
            expect(result?.state).toBe(to);
            expect(after?.state).toBe(to);
            const events = await t.store.listEvents(run.id, 0, 100);
            expect(events.at(-1)).toMatchObject({ type: "state", data: { state: to, previous: state } });
          } else {
            expect(result).toBeUndefined();
            expect(after?.state).toBe(state);
          }
        });
      }
    }

    it("a blocked run holds no worker; answered, it waits for one to continue it, before queued runs", async () => {
      const run = await runIn("INPROGRESS");
      await t.store.startAgent(run.id, W);
      const question = { message: "Which file?", error_code: "awaiting_input", retryable: false };
      await t.store.transition(run.id, "block", { statusMessage: question }, { workerId: W });
      expect(await t.store.getRun("t1", run.id)).toMatchObject({
        state: "BLOCKED",
        workerId: null,
        statusMessage: question,
      });
      const queued = await t.create();
      await t.store.transition(run.id, "answer");
      // Working again: the question is no longer its status.
      expect(await t.store.getRun("t1", run.id)).toMatchObject({
        state: "INPROGRESS",
        resuming: "answered",
        statusMessage: null,
      });
      expect(await t.store.claimNextRun("W2", 60_000)).toMatchObject({
        id: run.id,
        resuming: "answered",
        agentStarted: true,
      });
      expect((await t.store.claimNextRun("W3", 60_000))?.id).toBe(queued.id);
    });

    it("keeps a run's budget: recorded by the worker holding it, set by the answer to its pause", async () => {
      const run = await runIn("INPROGRESS");
      const limit = { scope: "run" as const, name: "its cost limit", used_usd: 0.5, limit_usd: 1 };
      expect(await t.store.recordBudget(run.id, "someone-else", { spent_usd: 9 })).toBe(false);
      expect(await t.store.recordBudget(run.id, W, { spent_usd: 0.5, limit })).toBe(true);
      expect((await t.store.getRun("t1", run.id))?.budget).toEqual({ spent_usd: 0.5, limit });
      await t.store.finishExecution(run.id, W, "block", {
        statusMessage: { message: "more", error_code: "awaiting_budget" },
      });
      expect(await t.store.recordBudget(run.id, W, { spent_usd: 1 })).toBe(false);
      const answer = { action: "extend" as const, amount_usd: 2, by: "Ada" };
      const answered = await t.store.transition(run.id, "answer", {
        budget: { extended_usd: 2, limit, answer },
      });
      expect(answered?.budget).toEqual({ extended_usd: 2, limit, answer });
      // A run that never had a budget has none.
      expect((await runIn("QUEUED")).budget).toBeUndefined();
    });

    it("cancels the runs blocked since before a time, with the message given", async () => {
      const run = await runIn("BLOCKED");
      expect(
        await t.store.cancelUnansweredRuns(new Date(Date.now() - 60_000).toISOString(), () => ({
          message: "x",
        })),
      ).toEqual([]);
      const ended = await t.store.cancelUnansweredRuns(new Date(Date.now() + 1000).toISOString(), (r) => ({
        message: `nobody answered ${r.id}`,
        error_code: "unanswered",
      }));
      expect(ended.map((r) => [r.id, r.state])).toEqual([[run.id, "CANCELLED"]]);
      expect((await t.store.getRun("t1", run.id))?.statusMessage).toMatchObject({
        message: `nobody answered ${run.id}`,
      });
    });

    it("a worker that does not hold the lease cannot finish the run", async () => {
      const run = await runIn("INPROGRESS");
      expect(await t.store.transition(run.id, "succeed", {}, { workerId: "someone-else" })).toBeUndefined();
      expect((await t.store.getRun("t1", run.id))?.state).toBe("INPROGRESS");
    });

    it("handoff clears status_message and finished_at and starts a new execution", async () => {
      const run = await runIn("INPROGRESS");
      await t.store.transition(run.id, "fail", { statusMessage: { message: "boom" } }, { workerId: W });
      const failed = await t.store.getRun("t1", run.id);
      expect(failed).toMatchObject({ state: "FAILED", statusMessage: { message: "boom" } });
      expect(failed?.finishedAt).not.toBeNull();
      const again = await t.store.transition(run.id, "handoff");
      expect(again).toMatchObject({ state: "QUEUED", statusMessage: null, finishedAt: null, execution: 2 });
    });
  });

  it("runsFinishedBefore names those of the given runs that reached a terminal state before the time", async () => {
    const old: string[] = [];
    for (const state of ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"] as const)
      old.push((await runIn(state)).id);
    await waitPast(1);
    const cutoff = new Date().toISOString();
    await waitPast(1);
    const recent = await runIn("SUCCEEDED");
    const running = await runIn("INPROGRESS");
    const queued = await runIn("QUEUED");
    const all = [...old, recent.id, running.id, queued.id, "no-such-run"];
    expect((await t.store.runsFinishedBefore(all, cutoff)).sort()).toEqual([...old].sort());
    expect(await t.store.runsFinishedBefore([old[0]!, recent.id], cutoff)).toEqual([old[0]]);
    expect(await t.store.runsFinishedBefore([], cutoff)).toEqual([]);
    // A follow-up hands a finished run back to the queue: its workspace is in use again.
    await t.store.transition(old[1]!, "handoff");
    expect(await t.store.runsFinishedBefore([old[1]!], cutoff)).toEqual([]);
  });

  it("concurrent cancel and finish leave exactly one terminal state", async () => {
    for (let i = 0; i < 30; i++) {
      const run = await runIn("INPROGRESS");
      const [cancelled, finished] = await Promise.all([
        t.store.transition(run.id, "cancel"),
        t.store.finishExecution(run.id, W, "succeed", {}),
      ]);
      const final = await t.store.getRun("t1", run.id);
      expect([cancelled?.state, finished.run?.state].filter(Boolean)).toHaveLength(1);
      expect(["CANCELLED", "SUCCEEDED"]).toContain(final?.state);
      const terminalEvents = (await t.store.listEvents(run.id, 0, 100)).filter(
        (e) => e.type === "state" && e.data.state !== "QUEUED" && e.data.state !== "INPROGRESS",
      );
      expect(terminalEvents).toHaveLength(1);
    }
  });

  it("cancelRun cancels the team's active run once, refuses a finished one, and ignores other teams", async () => {
    const run = await create();
    expect(await t.store.cancelRun("t2", run.id, {})).toBeUndefined();
    const first = await t.store.cancelRun("t1", run.id, { statusMessage: { message: "stop" } });
    expect(first?.kind === "created" && first.value).toMatchObject({
      state: "CANCELLED",
      statusMessage: { message: "stop" },
    });
    expect(await t.store.cancelRun("t1", run.id, {})).toEqual({ kind: "refused", state: "CANCELLED" });
  });

  it("keyset pagination visits every run once while runs are being inserted", async () => {
    const existing = new Set<string>();
    for (let i = 0; i < 300; i++) existing.add((await create({ title: `t${i % 17}` })).id);
    for (const sortBy of ["created_at", "updated_at", "title"] as const) {
      for (const sortOrder of ["asc", "desc"] as const) {
        const seen: string[] = [];
        let after: { value: string; id: string } | undefined;
        for (;;) {
          const page = await t.store.listRuns("t1", {
            limit: 37,
            sortBy,
            sortOrder,
            ...(after ? { after } : {}),
          });
          seen.push(...page.runs.map((r) => r.id));
          await create({ title: "t3" }); // a concurrent insert between pages
          const last = page.runs.at(-1);
          if (!page.hasMore || !last) break;
          after = {
            value:
              sortBy === "title" ? last.title : sortBy === "created_at" ? last.createdAt : last.updatedAt,
            id: last.id,
          };
        }
        expect(new Set(seen).size, `${sortBy} ${sortOrder}: no duplicates`).toBe(seen.length);
        for (const id of existing) expect(seen, `${sortBy} ${sortOrder}: no gaps`).toContain(id);
      }
    }
  });

  it("filters runs", async () => {
    const a = await create({
      title: "Fix the flaky LOGIN test",
      agentConfig: { name: "n1", model_id: "m1" },
      source: "SLACK",
    });
    await create({
      title: "other",
      prompt: "nothing",
      creator: { type: "user", uid: "u2", display_name: "U2" },
    });
    const ids = async (q: Partial<Parameters<Store["listRuns"]>[1]>) =>
      (await t.store.listRuns("t1", { limit: 50, sortBy: "created_at", sortOrder: "asc", ...q })).runs.map(
        (r) => r.id,
      );
    expect(await ids({ q: "login" })).toEqual([a.id]);
    expect(await ids({ name: "n1" })).toEqual([a.id]);
    expect(await ids({ modelId: "m1" })).toEqual([a.id]);
    expect(await ids({ source: "SLACK" })).toEqual([a.id]);
    expect(await ids({ creator: "u2" })).toHaveLength(1);
    expect(await ids({ states: ["SUCCEEDED"] })).toEqual([]);
    expect(await ids({ states: [] })).toEqual([]);
    expect(await ids({ createdAfter: "2999-01-01T00:00:00.000Z" })).toEqual([]);
    expect(await t.store.listRuns("t2", { limit: 50, sortBy: "created_at", sortOrder: "asc" })).toEqual({
      runs: [],
      hasMore: false,
    });
  });

  describe("Oz's run filters", () => {
    const ids = async (q: Partial<Parameters<Store["listRuns"]>[1]>) =>
      (await t.store.listRuns("t1", { limit: 50, sortBy: "created_at", sortOrder: "asc", ...q })).runs.map(
        (r) => r.id,
      );

    it("metadata: every pair must match exactly, keys taken literally", async () => {
      const both = await create({ metadata: { ticket: "VIS-1", team: "web" } });
      const one = await create({ metadata: { ticket: "VIS-1" } });
      const odd = await create({ metadata: { 'a.b"[0]': "x", ticket: "VIS-10" } });
      expect(await ids({ metadata: { ticket: "VIS-1" } })).toEqual([both.id, one.id]);
      expect(await ids({ metadata: { ticket: "VIS-1", team: "web" } })).toEqual([both.id]);
      expect(await ids({ metadata: { ticket: "VIS" } })).toEqual([]);
      expect(await ids({ metadata: { ticket: "vis-1" } })).toEqual([]);
      expect(await ids({ metadata: { 'a.b"[0]': "x" } })).toEqual([odd.id]);
      expect(await ids({ metadata: { team: "web", missing: "" } })).toEqual([]);
    });

    it("artifactType: runs having at least one artifact of that type", async () => {
      const running = await runIn("INPROGRESS");
      const artifact = { artifact_type: "PULL_REQUEST", created_at: running.createdAt, data: { url: "u" } };
      await t.store.transition(running.id, "succeed", { artifacts: [artifact] }, { workerId: W });
      await create();
      expect(await ids({ artifactType: "PULL_REQUEST" })).toEqual([running.id]);
      expect(await ids({ artifactType: "PLAN" })).toEqual([]);
    });

    it("source: one, or any of several", async () => {
      const slack = await create({ source: "SLACK" });
      const api = await create({ source: "API" });
      await create({ source: "GITHUB_WEBHOOK" });
      expect(await ids({ source: "SLACK" })).toEqual([slack.id]);
      expect(await ids({ source: ["SLACK", "API"] })).toEqual([slack.id, api.id]);
      expect(await ids({ source: [] })).toEqual([]);
    });

    it("executor: the run's creator, who always executes it", async () => {
      const mine = await create({ creator: { type: "user", uid: "u9", display_name: "U9" } });
      await create();
      expect(await ids({ executor: "u9" })).toEqual([mine.id]);
    });

    it("executionLocation: REMOTE matches every run, LOCAL none", async () => {
      const a = await create();
      const b = await create();
      expect(await ids({ executionLocation: "REMOTE" })).toEqual([a.id, b.id]);
      expect(await ids({ executionLocation: "LOCAL" })).toEqual([]);
    });

    it("scheduleId matches no run, since none records a schedule", async () => {
      const run = await create();
      expect(await ids({})).toEqual([run.id]);
      expect(await ids({ scheduleId: "s1" })).toEqual([]);
    });

    it("ancestorRunId: the run's descendants at any depth through parentRunId, not the run itself", async () => {
      const root = await create();
      const child = await create({ parentRunId: root.id });
      const grandchild = await create({ parentRunId: child.id, mode: "plan" });
      await create();
      expect(await ids({ ancestorRunId: root.id })).toEqual([child.id, grandchild.id]);
      expect(await ids({ ancestorRunId: child.id })).toEqual([grandchild.id]);
      expect(await ids({ ancestorRunId: grandchild.id })).toEqual([]);
      expect(await t.store.getRun("t1", grandchild.id)).toMatchObject({
        parentRunId: child.id,
        mode: "plan",
      });
      const plain = await t.store.getRun("t1", root.id);
      expect(plain?.parentRunId ?? null).toBeNull();
      expect(plain?.mode ?? "normal").toBe("normal");
    });

    it("rootRunId is kept as created: the top of the run's tree of parents", async () => {
      const root = await create();
      const child = await create({ parentRunId: root.id, rootRunId: root.id });
      expect((await t.store.getRun("t1", child.id))?.rootRunId).toBe(root.id);
      expect((await t.store.getRun("t1", root.id))?.rootRunId ?? null).toBeNull();
    });

    it("taskStatus: own states, or (running) an active run anywhere below", async () => {
      const done = await runIn("CANCELLED");
      const root = await runIn("SUCCEEDED");
      const child = await create({ parentRunId: root.id, rootRunId: root.id });
      const grandchild = await create({ parentRunId: child.id, rootRunId: root.id });
      const running = { states: ["QUEUED", "INPROGRESS"] as RunState[], orActiveBelow: true };
      expect(await ids({ taskStatus: running })).toEqual([root.id, child.id, grandchild.id]);
      expect(await ids({ taskStatus: { states: ["SUCCEEDED"], orActiveBelow: false } })).toEqual([root.id]);
      expect(await ids({ taskStatus: { states: ["CANCELLED"], orActiveBelow: false } })).toEqual([done.id]);
      expect(await ids({ taskStatus: { states: [], orActiveBelow: false } })).toEqual([]);
      await t.store.cancelRun("t1", grandchild.id, {});
      await t.store.cancelRun("t1", child.id, {});
      expect(await ids({ taskStatus: running })).toEqual([]);
    });

    it("findRunsByUrl: by trigger URL (with an anchor or query after it) or an artifact's url, latest first", async () => {
      const issue = "https://github.com/a/b/issues/1";
      const byComment = await create({ triggerUrl: `${issue}#issuecomment-5` });
      const byIssue = await create({ triggerUrl: issue });
      await create({ triggerUrl: `${issue}0` });
      const pr = "https://github.com/a/b/pull/2";
      const opened = await create();
      await t.store.recordArtifact(opened.id, {
        artifact_type: "PULL_REQUEST",
        created_at: opened.createdAt,
        data: { url: pr },
      });
      expect((await t.store.findRunsByUrl("t1", issue)).map((r) => r.id)).toEqual([byIssue.id, byComment.id]);
      expect((await t.store.findRunsByUrl("t1", pr)).map((r) => r.id)).toEqual([opened.id]);
      expect(await t.store.findRunsByUrl("t2", pr)).toEqual([]);
    });

    it("qRef: q also finds the run by its id or its session id", async () => {
      const run = await create({ title: "plain" });
      await create({ title: "other" });
      expect(await ids({ q: "zzz", qRef: { runId: run.id } })).toEqual([run.id]);
      expect(await ids({ q: "zzz", qRef: { sessionId: run.sessionId } })).toEqual([run.id]);
      expect(await ids({ q: "zzz" })).toEqual([]);
    });

    it("sorts by agent name then id, runs without a name last in either order, across pages", async () => {
      const named: RunRecord[] = [];
      for (const name of ["b", "a", "c", "a", "b"]) named.push(await create({ agentConfig: { name } }));
      const nameless = [await create(), await create(), await create()];
      const byName = (x: RunRecord, y: RunRecord) =>
        x.agentConfig.name! < y.agentConfig.name! ? -1 : x.agentConfig.name! > y.agentConfig.name! ? 1 : 0;
      const byId = (x: RunRecord, y: RunRecord) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
      const asc = [...named].sort((x, y) => byName(x, y) || byId(x, y));
      const desc = [...named].sort((x, y) => byName(y, x) || byId(y, x));
      const expected = {
        asc: [...asc, ...[...nameless].sort(byId)].map((r) => r.id),
        desc: [...desc, ...[...nameless].sort((x, y) => byId(y, x))].map((r) => r.id),
      };
      for (const sortOrder of ["asc", "desc"] as const) {
        for (const limit of [1, 2, 3, 50]) {
          const seen: string[] = [];
          let after: { value: string | null; id: string } | undefined;
          for (;;) {
            const page = await t.store.listRuns("t1", {
              limit,
              sortBy: "agent",
              sortOrder,
              ...(after ? { after } : {}),
            });
            seen.push(...page.runs.map((r) => r.id));
            const last = page.runs.at(-1);
            if (!page.hasMore || !last) break;
            after = { value: last.agentConfig.name ?? null, id: last.id };
          }
          expect(seen, `${sortOrder} by ${limit}`).toEqual(expected[sortOrder]);
        }
      }
    });
  });

  it("matches q case-insensitively in any script, not only ASCII", async () => {
    const umlaut = await create({ title: "Ärger mit dem Build", prompt: "p" });
    const street = await create({ title: "t", prompt: "Rename STRASSE in the address form" });
    const greek = await create({ title: "ΟΔΌΣ ΣΤΑΘΜΌΣ", prompt: "p" });
    const cyrillic = await create({ title: "t", prompt: "Проверь ЖУРНАЛ ошибок" });
    const ids = async (q: string) =>
      (await t.store.listRuns("t1", { limit: 50, sortBy: "created_at", sortOrder: "asc", q })).runs.map(
        (r) => r.id,
      );
    expect(await ids("ärger")).toEqual([umlaut.id]);
    expect(await ids("ÄRGER")).toEqual([umlaut.id]);
    // Full folding: ß is ss, either way round.
    expect(await ids("straße")).toEqual([street.id]);
    expect(await ids("Strasse")).toEqual([street.id]);
    // A final sigma matches a capital sigma and a medial one.
    expect(await ids("οδός σταθμός")).toEqual([greek.id]);
    expect(await ids("журнал")).toEqual([cyrillic.id]);
    expect(await ids("ärgerlich")).toEqual([]);
  });
}
