import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model/server.ts";
import { GIF_1x1, PNG_1x1, wireAttachment } from "./images.ts";

type Ev = { type: string; data: Record<string, unknown> };
type ChatMessage = { role: string; content: string | Array<Record<string, unknown>> };

let fake: FakeModel;
let t: TestDispatch;
beforeAll(async () => {
  fake = await startFakeModel([
    { text: "A single pixel." },
    { text: "A GIF this time." },
    { text: "I cannot see images." },
  ]);
  t = await startTestDispatch({ OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl("openai") });
});
afterAll(async () => {
  await t?.stop();
  await fake?.close();
});

const events = async (id: string) =>
  (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Ev[];
const users = (request: Record<string, unknown>) =>
  (request.messages as ChatMessage[]).filter((m) => m.role === "user");
const images = (m: ChatMessage) =>
  Array.isArray(m.content)
    ? m.content.filter((p) => p.type === "image_url").map((p) => (p.image_url as { url: string }).url)
    : [];
const dataUrl = (type: string, bytes: Buffer) => `data:${type};base64,${bytes.toString("base64")}`;

describe("images reach a vision model as image parts of their turn (loopback OpenAI-compatible server)", () => {
  it("the create's image is in the prompt's message; a follow-up's in the follow-up's, the prompt's kept", async () => {
    const models = await t.api("GET", "/api/v1/agent/models");
    expect(models.status).toBe(200);
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "What is in the picture?",
      config: { model_id: "openai-compatible/llava-13b" },
      attachments: [wireAttachment("pixel.png", PNG_1x1)],
    });
    expect(res.status).toBe(200);
    const id = res.body.run_id as string;
    expect((await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");
    const first = users(fake.agentRequests()[0]!.body);
    expect(first).toHaveLength(1);
    expect(images(first[0]!)).toEqual([dataUrl("image/png", PNG_1x1)]);
    expect(JSON.stringify(first[0]!.content)).toContain("What is in the picture?");

    const followup = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, {
      message: "And this one?",
      attachments: [wireAttachment("anim.gif", GIF_1x1, "image/gif")],
    });
    expect(followup.body.outcome).toBe("handoff_execution");
    await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"]);
    // The handoff execution rebuilds the conversation from the transcript: each image stays in its turn.
    const second = users(fake.agentRequests()[1]!.body);
    expect(second.map(images)).toEqual([[dataUrl("image/png", PNG_1x1)], [dataUrl("image/gif", GIF_1x1)]]);
    expect(JSON.stringify(second[1]!.content)).toContain("And this one?");
    // Nothing said they were not shown.
    expect((await events(id)).filter((e) => e.data.phase === "attachments")).toEqual([]);
  });

  it("a model without vision gets no image; the transcript says the images were not shown", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "Describe it",
      config: { model_id: "openai-compatible/fake-coder" },
      attachments: [wireAttachment("diagram.png", PNG_1x1)],
    });
    const id = res.body.run_id as string;
    expect((await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");
    const request = fake.agentRequests()[2]!.body;
    expect(users(request).flatMap(images)).toEqual([]);
    expect(JSON.stringify(request.messages)).toContain("diagram.png");
    const notes = (await events(id)).filter((e) => e.type === "log" && e.data.phase === "attachments");
    expect(notes).toHaveLength(1);
    expect(notes[0]!.data.message).toMatch(/not shown to the model \(diagram\.png\).*fake-coder/);
  });
});
