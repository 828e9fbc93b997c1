import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GIF_1x1, PNG_1x1, wireAttachment } from "../../../test/attachments/images.ts";
import { startTestDispatch, type TestDispatch } from "../../../test/support/dispatch.ts";
import { BadRequestError, Dispatch, NotFoundError } from "../src/index.ts";

// client.runs with image attachments against a live Dispatch on 127.0.0.1: create and follow-up carry
// them, listHandoffAttachments lists them with signed links that serve the same bytes.

let t: TestDispatch;
let client: Dispatch;

beforeAll(async () => {
  t = await startTestDispatch();
  client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1` });
});
afterAll(async () => {
  await t?.stop();
});

async function download(url: string): Promise<Buffer> {
  // The signed link needs no API key.
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe("client.runs attachments", () => {
  it("creates a run with an image, follows up with another, and lists both", async () => {
    const created = await client.runs.create({
      prompt: "$ echo with a picture",
      attachments: [wireAttachment("shot.png", PNG_1x1)],
    });
    const followup = await client.runs.followup(created.run_id, {
      message: "and a diagram",
      attachments: [wireAttachment("diagram.gif", GIF_1x1, "image/gif")],
    });

    const { attachments } = await client.runs.listHandoffAttachments(created.run_id);
    expect(attachments).toHaveLength(2);
    expect(attachments[0]).toMatchObject({
      filename: "shot.png",
      mime_type: "image/png",
      size_bytes: PNG_1x1.length,
      followup_id: null,
    });
    expect(attachments[1]).toMatchObject({
      filename: "diagram.gif",
      mime_type: "image/gif",
      followup_id: followup.followup_id,
    });
    expect(Date.parse(attachments[0]!.expires_at)).toBeGreaterThan(Date.now());
    expect(await download(attachments[0]!.download_url)).toEqual(PNG_1x1);
    expect(await download(attachments[1]!.download_url)).toEqual(GIF_1x1);
  });

  it("a run without attachments lists none; an unknown run is NotFoundError", async () => {
    const created = await client.runs.create({ prompt: "$ echo nothing attached" });
    expect(await client.runs.listHandoffAttachments(created.run_id)).toEqual({ attachments: [] });
    await expect(client.runs.listHandoffAttachments("no-such-run")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("a file that is not an image is refused with a 400 naming it", async () => {
    const refused = await client.runs
      .create({
        prompt: "$ echo never",
        attachments: [wireAttachment("notes.png", Buffer.from("plain text, not a picture"))],
      })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(BadRequestError);
    expect((refused as BadRequestError).problem?.detail).toContain("notes.png");
  });
});
