import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { PNG_1x1, wireAttachment } from "./images.ts";

let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch();
});
afterAll(async () => {
  await t?.stop();
});

describe("session page: the run's attachments", () => {
  it("shows each image as a thumbnail through its signed link, with its name escaped", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "$ echo hi",
      attachments: [wireAttachment('<img src=x onerror="alert(1)">.png', PNG_1x1)],
    });
    expect(res.status).toBe(200);
    const run = await waitForState(t, res.body.run_id, ["SUCCEEDED"]);
    const page = await fetch(run.session_link);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("img-src 'self' data:;");
    const html = await page.text();
    expect(html).not.toContain('<img src=x onerror="alert(1)">');
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;.png");
    const src = /<section id="attachments">[\s\S]*?<img src="([^"]+)"/.exec(html)?.[1];
    expect(src).toMatch(/^\/api\/v1\/agent\/attachments\/[^/]+\/content\?/);
    const image = await fetch(new URL(src!.replaceAll("&amp;", "&"), t.url));
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await image.arrayBuffer())).toEqual(PNG_1x1);

    // The scripted harness only notes the image in the transcript.
    const events = await waitFor(async () => {
      const evs = (await t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`)).body
        .events as Array<{
        type: string;
        data: Record<string, unknown>;
      }>;
      return evs.some((e) => e.data.phase === "attachments") ? evs : undefined;
    });
    expect(events.find((e) => e.data.phase === "attachments")?.data.message).toMatch(
      /1 image was attached .*scripted harness does not look at images/,
    );
  });
});
