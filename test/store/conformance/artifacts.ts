import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import { ARTIFACT_HEAD_BYTES } from "../../../src/store/store.ts";
import type { StoreSuite } from "./suite.ts";

export function artifactsConformance(t: StoreSuite): void {
  const { runIn } = t;

  /** Records a FILE artifact holding `content` on a finished run of team t1; returns its uid. */
  const recordPatch = async (content: Uint8Array): Promise<string> => {
    const run = await runIn("SUCCEEDED");
    const uid = uuidv7();
    const data = { artifact_uid: uid, filename: "changes.patch", size_bytes: content.length };
    const recorded = await t.store.recordArtifact(
      run.id,
      { artifact_type: "FILE", created_at: new Date().toISOString(), data },
      { uid, contentType: "text/x-diff", content },
    );
    expect(recorded?.artifacts).toHaveLength(1);
    return uid;
  };

  describe("artifact files", () => {
    it("read whole, or only their head (at most ARTIFACT_HEAD_BYTES) with their size", async () => {
      // 30 MB of numbered lines: the head read returns exactly the bytes asked for, from the start.
      const content = Buffer.from(
        Array.from({ length: 2_500_000 }, (_, i) => `+line ${i}`).join("\n"),
        "utf8",
      );
      expect(content.length).toBeGreaterThan(30_000_000);
      const uid = await recordPatch(content);

      const head = await t.store.readArtifactHead("t1", uid, 200 * 1024);
      expect(head?.sizeBytes).toBe(content.length);
      expect(head?.head.byteLength).toBe(200 * 1024);
      expect(Buffer.from(head!.head).equals(content.subarray(0, 200 * 1024))).toBe(true);

      // More than the store keeps apart is never read: the head stops at ARTIFACT_HEAD_BYTES.
      const most = await t.store.readArtifactHead("t1", uid, content.length);
      expect(most?.head.byteLength).toBe(ARTIFACT_HEAD_BYTES);
      expect(most?.sizeBytes).toBe(content.length);

      expect(Buffer.from((await t.store.readArtifactContent("t1", uid))!).equals(content)).toBe(true);
    });

    it("a small file's head is all of it; another team's file has none", async () => {
      const content = Buffer.from("+one line\n", "utf8");
      const uid = await recordPatch(content);
      const head = await t.store.readArtifactHead("t1", uid, 200 * 1024);
      expect(Buffer.from(head!.head).toString("utf8")).toBe("+one line\n");
      expect(head?.sizeBytes).toBe(content.length);
      expect(await t.store.readArtifactHead("t2", uid, 200 * 1024)).toBeUndefined();
      expect(await t.store.readArtifactHead("t1", uuidv7(), 200 * 1024)).toBeUndefined();
    });
  });
}
