import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import type { NewRunEvent } from "../../../src/store/store.ts";
import { GIF_1x1, newAttachment, PNG_1x1 } from "../../attachments/images.ts";
import { type StoreSuite, W } from "./suite.ts";

export function attachmentsConformance(t: StoreSuite): void {
  const { newRun, runIn } = t;

  describe("attachments", () => {
    it("are stored with the run's create, in order, readable by the run's team only", async () => {
      const run = newRun();
      const a = newAttachment("a.png", PNG_1x1);
      const b = newAttachment("b.gif", GIF_1x1, "image/gif");
      const created = await t.store.createRun(run, undefined, [a, b]);
      expect(created.kind).toBe("created");
      const list = await t.store.listAttachments("t1", run.id);
      expect(list).toEqual([
        expect.objectContaining({
          id: a.id,
          runId: run.id,
          followupId: null,
          fileName: "a.png",
          mimeType: "image/png",
          sizeBytes: PNG_1x1.length,
          sha256: a.sha256,
        }),
        expect.objectContaining({ id: b.id, fileName: "b.gif", mimeType: "image/gif" }),
      ]);
      expect(Buffer.from((await t.store.readAttachmentContent("t1", b.id))!)).toEqual(GIF_1x1);
      expect(await t.store.getAttachment("t1", a.id)).toMatchObject({ fileName: "a.png" });
      expect(await t.store.listAttachments("t2", run.id)).toEqual([]);
      expect(await t.store.getAttachment("t2", a.id)).toBeUndefined();
      expect(await t.store.readAttachmentContent("t2", a.id)).toBeUndefined();
    });

    it("a follow-up's attachments name the follow-up, and its event lists them", async () => {
      const run = await runIn("SUCCEEDED");
      const followupId = uuidv7();
      const shot = newAttachment("shot.png", PNG_1x1);
      const result = await t.store.addFollowup("t1", run.id, {
        id: followupId,
        message: "look at this",
        mode: "normal",
        attachments: [shot],
      });
      expect(result?.kind).toBe("created");
      expect(await t.store.listAttachments("t1", run.id)).toEqual([
        expect.objectContaining({ id: shot.id, followupId }),
      ]);
      const events = await t.store.listEvents(run.id, 0, 100);
      expect(events.find((e) => e.type === "followup")?.data.attachments).toEqual([
        { attachment_id: shot.id, file_name: "shot.png", mime_type: "image/png", size_bytes: PNG_1x1.length },
      ]);
    });

    // The start's events as the executor writes them, and with an event a webhook reports (another path).
    const reported: NewRunEvent = {
      type: "followup",
      data: { followup_id: "f-note", message: "noted", mode: "normal", outcome: "live_session" },
    };
    for (const [kind, events] of [
      ["its opening events", [{ type: "message", data: { role: "user", text: "do it" } }]],
      ["an event a webhook reports", [reported]],
    ] as Array<[string, NewRunEvent[]]>) {
      it(`the agent's start (${kind}) answers the run's attachments: its create's and those of the follow-ups it takes`, async () => {
        const run = newRun();
        const own = newAttachment("own.png", PNG_1x1);
        await t.store.createRun(run, undefined, [own]);
        expect((await t.store.claimNextRun(W, 60_000))?.id).toBe(run.id);
        const followupId = uuidv7();
        const shot = newAttachment("shot.gif", GIF_1x1, "image/gif");
        await t.store.addFollowup("t1", run.id, {
          id: followupId,
          message: "and this",
          mode: "normal",
          attachments: [shot],
        });
        expect(await t.store.startAgent(run.id, "someone-else", events)).toBeUndefined();
        const started = await t.store.startAgent(run.id, W, events);
        expect(started?.followups.map((f) => f.id)).toEqual([followupId]);
        expect(started?.attachments.map((a) => [a.id, a.followupId])).toEqual([
          [own.id, null],
          [shot.id, followupId],
        ]);
        expect(started?.attachments).toEqual(await t.store.listAttachments("t1", run.id));
      });
    }

    it("the agent's start of a run without attachments answers none", async () => {
      const run = await runIn("INPROGRESS");
      expect(await t.store.startAgent(run.id, W)).toEqual({ followups: [], attachments: [] });
    });

    it("the same bytes sent twice (two runs, or twice in one) are two attachments with equal content", async () => {
      const first = newRun();
      const second = newRun();
      const x = newAttachment("x.png", PNG_1x1);
      const y = newAttachment("y.png", PNG_1x1);
      await t.store.createRun(first, undefined, [x, y]);
      const z = newAttachment("z.png", PNG_1x1);
      await t.store.createRun(second, undefined, [z]);
      for (const [run, a] of [
        [first, x],
        [first, y],
        [second, z],
      ] as const) {
        expect((await t.store.getAttachment("t1", a.id))?.runId).toBe(run.id);
        expect(Buffer.from((await t.store.readAttachmentContent("t1", a.id))!)).toEqual(PNG_1x1);
      }
      expect(new Set([x.sha256, y.sha256, z.sha256]).size).toBe(1);
    });

    it("an idempotent replay of a create stores nothing more", async () => {
      const claim = {
        principalId: "p1",
        key: "k-attach",
        requestHash: "h1",
        respond: (r: unknown) => ({ id: (r as { id: string }).id }),
        notBefore: new Date(Date.now() - 60_000).toISOString(),
      };
      const run = newRun();
      await t.store.createRun(run, claim, [newAttachment("a.png", PNG_1x1)]);
      const replay = await t.store.createRun(newRun(), claim, [newAttachment("a.png", PNG_1x1)]);
      expect(replay.kind).toBe("replayed");
      expect(await t.store.listAttachments("t1", run.id)).toHaveLength(1);
    });
  });
}
