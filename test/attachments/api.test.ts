import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { GIF_1x1, PNG_1x1, wireAttachment } from "./images.ts";

let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch();
});
afterAll(async () => {
  await t?.stop();
});

const create = (body: Record<string, unknown>) => t.api("POST", "/api/v1/agent/runs", body);
const listed = async (runId: string) => {
  const res = await t.api("GET", `/api/v1/agent/runs/${runId}/handoff/attachments`);
  expect(res.status).toBe(200);
  return res.body.attachments as Array<Record<string, unknown>>;
};

describe("attachments on create and follow-ups: validation", () => {
  const refused = async (attachments: unknown[], words: RegExp) => {
    const res = await create({ prompt: "look", attachments });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect(res.body.error_code).toBe("invalid_request");
    expect(res.body.detail).toMatch(words);
    return res.body.detail as string;
  };

  it("refuses a type that is not an allowed image, naming the file and the allowed types", async () => {
    const detail = await refused(
      [wireAttachment("notes.pdf", Buffer.from("%PDF-1.4\n"), "application/pdf")],
      /notes\.pdf/,
    );
    expect(detail).toContain("image/jpeg, image/png, image/gif, image/webp");
  });

  it("refuses bytes that are not the type declared (sniffed), naming the file", async () => {
    const detail = await refused([wireAttachment("fake.png", Buffer.from("<svg/>"))], /fake\.png/);
    expect(detail).toMatch(/declared image\/png/);
    await refused(
      [wireAttachment("gif-as-png.png", GIF_1x1, "image/png")],
      /gif-as-png\.png.*image\/gif data/,
    );
  });

  it("refuses invalid base64, naming the file", async () => {
    await refused(
      [{ file_name: "broken.png", mime_type: "image/png", data: "not base64 at all!" }],
      /broken\.png.*not valid base64/,
    );
  });

  it("refuses an image over 5 MB once decoded, naming the file", async () => {
    const big = Buffer.concat([PNG_1x1, Buffer.alloc(5 * 1024 * 1024)]);
    await refused([wireAttachment("huge.png", big)], /huge\.png.*5 MB/);
  });

  it("refuses more than 5 attachments", async () => {
    const six = Array.from({ length: 6 }, (_, i) => wireAttachment(`p${i}.png`, PNG_1x1));
    await refused(six, /at most 5/);
  });

  it("admits five images of almost 5 MB each in one body (the route's own body limit)", async () => {
    // A valid PNG followed by padding: sniffed as PNG, just under the cap.
    const nearly = Buffer.concat([PNG_1x1, Buffer.alloc(5 * 1024 * 1024 - PNG_1x1.length - 16)]);
    const five = Array.from({ length: 5 }, (_, i) => wireAttachment(`big${i}.png`, nearly));
    const res = await create({ prompt: "five big ones", attachments: five });
    expect(res.status).toBe(200);
    const got = await listed(res.body.run_id);
    expect(got.map((a) => a.size_bytes)).toEqual([
      nearly.length,
      nearly.length,
      nearly.length,
      nearly.length,
      nearly.length,
    ]);
    // Other routes keep the 1 MB limit.
    const other = await t.api("POST", "/api/v1/agent/identities", { name: "x".repeat(2 * 1024 * 1024) });
    expect(other.status).toBe(413);
  });
});

describe("attachments: stored with the run, listed with signed links", () => {
  it("lists the create's and a follow-up's images in Oz's shape; the links serve the bytes without a key", async () => {
    const res = await create({
      prompt: "What is in these?\n$ echo ok",
      attachments: [wireAttachment("screen.png", PNG_1x1), wireAttachment("anim.gif", GIF_1x1, "image/gif")],
    });
    expect(res.status).toBe(200);
    const runId = res.body.run_id as string;
    await waitForState(t, runId, ["SUCCEEDED"]);
    const followup = await t.api("POST", `/api/v1/agent/runs/${runId}/followups`, {
      message: "and this one",
      attachments: [wireAttachment("later.png", PNG_1x1)],
    });
    expect(followup.status).toBe(200);

    const attachments = await listed(runId);
    expect(attachments.map((a) => [a.filename, a.mime_type, a.followup_id])).toEqual([
      ["screen.png", "image/png", null],
      ["anim.gif", "image/gif", null],
      ["later.png", "image/png", followup.body.followup_id],
    ]);
    for (const a of attachments) {
      expect(Object.keys(a)).toEqual(
        expect.arrayContaining(["attachment_id", "download_url", "filename", "mime_type"]),
      );
    }
    const gif = await fetch(String(attachments[1]!.download_url));
    expect(gif.status).toBe(200);
    expect(gif.headers.get("content-type")).toBe("image/gif");
    expect(gif.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await gif.arrayBuffer())).toEqual(GIF_1x1);

    // Altered links, other teams and unknown runs get nothing.
    const altered = String(attachments[0]!.download_url).replace(
      /signature=[^&]+/,
      `signature=${"A".repeat(43)}`,
    );
    expect((await fetch(altered)).status).toBe(403);
    const other = await t.newKey("other-team");
    const foreign = await t.api("GET", `/api/v1/agent/runs/${runId}/handoff/attachments`, undefined, {
      authorization: `Bearer ${other}`,
    });
    expect(foreign.status).toBe(404);
    expect((await t.api("GET", "/api/v1/agent/runs/no-such-run/handoff/attachments")).status).toBe(404);

    // The transcript's follow-up names its image.
    const events = (await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body
      .events as Array<{
      type: string;
      data: Record<string, unknown>;
    }>;
    expect(events.find((e) => e.type === "followup")?.data.attachments).toEqual([
      expect.objectContaining({ file_name: "later.png", mime_type: "image/png" }),
    ]);
  });

  it("is durable once acknowledged, and the same image sent twice is stored once", async () => {
    const image = Buffer.concat([PNG_1x1, Buffer.from("dedup-check")]);
    const first = await create({ prompt: "one", attachments: [wireAttachment("same.png", image)] });
    const second = await create({
      prompt: "two",
      attachments: [wireAttachment("again.png", image), wireAttachment("copy.png", image)],
    });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    // Another connection to the database file sees them at once: committed before the answer.
    const db = new DatabaseSync(t.dispatch.config.databasePath, { readOnly: true });
    try {
      const blobs = db
        .prepare("SELECT count(*) AS n FROM attachment_blobs WHERE content = ?")
        .get(new Uint8Array(image)) as { n: number };
      expect(blobs.n).toBe(1);
      const rows = db
        .prepare("SELECT count(*) AS n FROM run_attachments WHERE run_id IN (?, ?)")
        .get(first.body.run_id, second.body.run_id) as { n: number };
      expect(rows.n).toBe(3);
    } finally {
      db.close();
    }
    const store = new SqliteStore(t.dispatch.config.databasePath);
    try {
      const run = await store.getRunBySession(
        (await t.api("GET", `/api/v1/agent/runs/${second.body.run_id}`)).body.session_id,
      );
      const list = await store.listAttachments(run!.teamId, second.body.run_id);
      expect(list.map((a) => a.fileName)).toEqual(["again.png", "copy.png"]);
    } finally {
      await store.close();
    }
  });

  it("a refused attachment creates no run", async () => {
    const before = (await t.api("GET", "/api/v1/agent/runs?limit=500")).body.runs.length;
    const res = await create({ prompt: "nope", attachments: [wireAttachment("x.png", Buffer.from("nope"))] });
    expect(res.status).toBe(400);
    expect((await t.api("GET", "/api/v1/agent/runs?limit=500")).body.runs.length).toBe(before);
  });
});
