import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GIF_1x1, PNG_1x1 } from "../../attachments/images.ts";
import { waitFor } from "../../support/dispatch.ts";
import { nextTs, type SlackDispatch, startSlackDispatch } from "./support.ts";

// Files shared with a mention become the run's (or the follow-up's) image attachments: downloaded from
// the loopback fake Slack's url_private with the bot token, through the real signed /slack/events path.

const FIVE_MB = 5 * 1024 * 1024;

async function runWithPrompt(s: SlackDispatch, prompt: string) {
  return waitFor(async () => (await s.runs()).find((r) => r.prompt === prompt), {
    what: `a run with prompt ${JSON.stringify(prompt)}`,
  });
}

async function attachmentsOf(s: SlackDispatch, runId: string) {
  const res = await s.t.api("GET", `/api/v1/agent/runs/${runId}/handoff/attachments`);
  expect(res.status).toBe(200);
  return res.body.attachments as Array<Record<string, string>>;
}

async function bytesOf(url: string): Promise<Buffer> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** The ephemeral message to U1 in `thread` that mentions `words`. */
function noteIn(s: SlackDispatch, thread: string, words: string) {
  return waitFor(
    () =>
      s
        .ephemerals("U1")
        .map((c) => ({ thread: c.args.thread_ts, text: String(c.args.text) }))
        .find((m) => m.thread === thread && m.text.includes(words)),
    { what: `a note in the thread about ${words}` },
  );
}

describe("Slack files as run attachments", () => {
  let s: SlackDispatch;
  /** Somewhere no Slack file is: must never be asked for anything. */
  let elsewhere: Server;
  const elsewhereHits: string[] = [];

  beforeAll(async () => {
    s = await startSlackDispatch();
    elsewhere = createServer((req, res) => {
      elsewhereHits.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
      res.writeHead(200, { "content-type": "image/png" }).end(PNG_1x1);
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    await s?.stop();
    await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
  });

  it("a mention's image becomes the run's attachment; a PDF is named as not attached", async () => {
    const png = s.fake.shareFile("screenshot.png", PNG_1x1, "image/png");
    const pdf = s.fake.shareFile("report.pdf", Buffer.from("%PDF-1.4\n%âãÏÓ\n"), "application/pdf");
    const ts = nextTs();
    const res = await s.mention({ text: "<@UBOT> $ echo look at this", ts, files: [png, pdf] });
    expect(res.status).toBe(200);

    const run = await runWithPrompt(s, "$ echo look at this");
    const [attachment, ...rest] = await attachmentsOf(s, run.run_id);
    expect(rest).toEqual([]);
    expect(attachment).toMatchObject({
      filename: "screenshot.png",
      mime_type: "image/png",
      followup_id: null,
    });
    expect(await bytesOf(attachment!.download_url!)).toEqual(PNG_1x1);

    const note = await noteIn(s, ts, "report.pdf");
    expect(note.text).toContain("`report.pdf` is not an image, so it was not attached");
    // Only the image was downloaded, with the bot token.
    const downloads = s.fake.fileDownloads.filter((d) => d.path.includes(String(png.id)));
    expect(downloads.map((d) => d.token)).toEqual([s.fake.token]);
    expect(s.fake.fileDownloads.some((d) => d.path.includes(String(pdf.id)))).toBe(false);
  });

  it("a thread reply's image becomes the follow-up's attachment", async () => {
    const root = nextTs();
    await s.mention({ text: "<@UBOT> $ echo first", ts: root });
    const run = await runWithPrompt(s, "$ echo first");
    await waitFor(() => s.t.dispatch.store.getThreadBinding(run.run_id), { what: "the thread binding" });

    const gif = s.fake.shareFile("diagram.gif", GIF_1x1, "image/gif");
    await s.mention({ text: "<@UBOT> and this one", thread_ts: root, files: [gif] });
    const attachments = await waitFor(
      async () => {
        const list = await attachmentsOf(s, run.run_id);
        return list.length > 0 ? list : undefined;
      },
      { what: "the follow-up's attachment" },
    );
    expect(attachments).toHaveLength(1);
    expect(attachments[0]).toMatchObject({ filename: "diagram.gif", mime_type: "image/gif" });
    expect(attachments[0]!.followup_id).toEqual(expect.any(String));
    expect(await bytesOf(attachments[0]!.download_url!)).toEqual(GIF_1x1);
  });

  it("refuses politely, naming each file: too large, not really an image, more than five", async () => {
    const declaredHuge = s.fake.shareFile("huge.png", PNG_1x1, "image/png", { size: FIVE_MB + 1 });
    // Declared small, but the bytes are over the limit: the download stops and the file is refused.
    const reallyHuge = s.fake.shareFile(
      "sneaky.png",
      Buffer.concat([PNG_1x1, Buffer.alloc(FIVE_MB)]),
      "image/png",
      { size: 1000 },
    );
    const fake = s.fake.shareFile("notes.png", Buffer.from("just some text, not a picture"), "image/png");
    const images = Array.from({ length: 6 }, (_, i) =>
      s.fake.shareFile(`shot-${i + 1}.png`, PNG_1x1, "image/png"),
    );
    const ts = nextTs();
    await s.mention({
      text: "<@UBOT> $ echo many files",
      ts,
      files: [declaredHuge, reallyHuge, fake, ...images],
    });

    const run = await runWithPrompt(s, "$ echo many files");
    const attachments = await attachmentsOf(s, run.run_id);
    expect(attachments.map((a) => a.filename)).toEqual([
      "shot-1.png",
      "shot-2.png",
      "shot-3.png",
      "shot-4.png",
      "shot-5.png",
    ]);

    const note = await noteIn(s, ts, "huge.png");
    expect(note.text).toContain("`huge.png` is over 5 MB, so it was not attached.");
    expect(note.text).toContain("`sneaky.png` is over 5 MB, so it was not attached.");
    expect(note.text).toContain("`notes.png` is not an image, so it was not attached");
    expect(note.text).toContain(
      "Only 5 images can be attached to one message, so `shot-6.png` was not attached.",
    );
    // A file refused from what Slack declares, or past the count, is never downloaded.
    for (const skipped of [declaredHuge, images[5]!]) {
      expect(s.fake.fileDownloads.some((d) => d.path.includes(String(skipped.id)))).toBe(false);
    }
  });

  it("never sends the bot token to a host that is not Slack's", async () => {
    const file = s.fake.shareFile("elsewhere.png", PNG_1x1, "image/png");
    const port = (elsewhere.address() as AddressInfo).port;
    const moved = { ...file, url_private: `http://127.0.0.1:${port}/files-pri/T0TEAM-X/elsewhere.png` };
    const ts = nextTs();
    await s.mention({ text: "<@UBOT> $ echo from elsewhere", ts, files: [moved] });

    const run = await runWithPrompt(s, "$ echo from elsewhere");
    expect(await attachmentsOf(s, run.run_id)).toEqual([]);
    const note = await noteIn(s, ts, "elsewhere.png");
    expect(note.text).toContain("is not hosted by Slack, so it was not downloaded or attached");
    expect(elsewhereHits).toEqual([]);
  });

  it("a redelivered event starts one run with its attachment once", async () => {
    const png = s.fake.shareFile("once.png", PNG_1x1, "image/png");
    const ts = nextTs();
    const event = { text: "<@UBOT> $ echo once", ts, files: [png] };
    await s.mention(event, { eventId: "EvATTACHONCE" });
    await s.mention(event, { eventId: "EvATTACHONCE", headers: { "x-slack-retry-num": "1" } });
    await s.t.dispatch.surfaces.get("slack")?.inbound?.idle();

    const run = await runWithPrompt(s, "$ echo once");
    expect((await s.runs()).filter((r) => r.prompt === "$ echo once")).toHaveLength(1);
    expect((await attachmentsOf(s, run.run_id)).map((a) => a.filename)).toEqual(["once.png"]);
  });
});
