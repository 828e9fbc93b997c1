import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../../../test/support/dispatch.ts";
import {
  APIUserAbortError,
  BadRequestError,
  Dispatch,
  type Fetch,
  isTerminalState,
  type RunEvent,
  RunsPage,
} from "../src/index.ts";

// client.runs against a live Dispatch on 127.0.0.1 (scripted harness: `$ ` lines run as shell commands).

let t: TestDispatch;
let client: Dispatch;

beforeAll(async () => {
  t = await startTestDispatch();
  client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1` });
});
afterAll(async () => {
  await t?.stop();
});

/** The transcript from the start until the run is terminal (via the live event stream). */
async function transcriptUntilDone(dispatch: Dispatch, runId: string, after = 0): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of dispatch.runs.events(runId, { after })) {
    events.push(event);
    if (event.type === "state" && isTerminalState(String(event.data.state))) break;
  }
  return events;
}

describe("client.runs", () => {
  it("takes a scripted run through its whole lifecycle", async () => {
    const created = await client.runs.create({
      prompt: "Say hello\n$ echo hello from the client",
      title: "client lifecycle",
      config: { name: "client-lifecycle" },
      metadata: { ticket: "T-1" },
    });
    expect(created.state).toBe("QUEUED");
    expect(created.task_id).toBe(created.run_id);

    const first = await transcriptUntilDone(client, created.run_id);
    expect(first.map((e) => e.seq)).toEqual(first.map((_, i) => i + 1));
    const states = first.filter((e) => e.type === "state").map((e) => e.data.state);
    expect(states).toEqual(["QUEUED", "INPROGRESS", "SUCCEEDED"]);
    const result = first.find((e) => e.type === "tool_result");
    expect(result?.data).toMatchObject({ command: "echo hello from the client", exit_code: 0 });
    expect(result?.data.output).toBe("hello from the client\n");

    const run = await client.runs.retrieve(created.run_id);
    expect(run).toMatchObject({
      run_id: created.run_id,
      title: "client lifecycle",
      state: "SUCCEEDED",
      metadata: { ticket: "T-1" },
      agent_config: { name: "client-lifecycle" },
    });
    expect(run.session_link).toMatch(new RegExp(`/sessions/${run.session_id}$`));

    const listed = await client.runs.list({ name: "client-lifecycle" });
    expect(listed.runs.map((r) => r.run_id)).toEqual([created.run_id]);

    // A follow-up to the finished run starts a new execution of the same run.
    const followup = await client.runs.followup(created.run_id, { message: "$ echo second turn" });
    expect(followup.outcome).toBe("handoff_execution");
    const second = await transcriptUntilDone(client, created.run_id, first.at(-1)!.seq);
    expect(second.find((e) => e.type === "followup")?.data.message).toBe("$ echo second turn");
    expect(second.find((e) => e.type === "tool_result")?.data.output).toBe("second turn\n");
    expect(second.at(-1)?.data.state).toBe("SUCCEEDED");

    const page = await client.runs.listEvents(created.run_id, { after: 0, limit: 1000 });
    expect(page.events.map((e) => e.seq)).toEqual([...first, ...second].map((e) => e.seq));
    expect(page.next_after).toBe(second.at(-1)!.seq);

    // Cancel: a running command is stopped; a terminal run cannot be cancelled again.
    const long = await client.runs.create({ prompt: "$ sleep 30" });
    for await (const event of client.runs.events(long.run_id)) {
      if (event.type === "tool_call") break;
    }
    expect(await client.runs.cancel(long.run_id)).toBe(long.run_id);
    const cancelled = await client.runs.retrieve(long.run_id);
    expect(cancelled.state).toBe("CANCELLED");
    expect(cancelled.status_message?.message).toBeTruthy();
    await expect(client.runs.cancel(long.run_id)).rejects.toThrow(BadRequestError);
  });

  it("events() ends by itself at the run's terminal state, unless a follow-up came after it", async () => {
    const created = await client.runs.create({ prompt: "$ echo done" });
    const seen: RunEvent[] = [];
    for await (const event of client.runs.events(created.run_id)) seen.push(event);
    expect(seen.at(-1)).toMatchObject({ type: "state", data: { state: "SUCCEEDED" } });

    // Started after the end of a finished run: ends at once instead of waiting forever.
    const after: RunEvent[] = [];
    for await (const event of client.runs.events(created.run_id, { after: seen.at(-1)!.seq }))
      after.push(event);
    expect(after).toEqual([]);

    // A follow-up after the terminal state: the stream goes on to the second execution's end.
    await client.runs.followup(created.run_id, { message: "$ exit 3" });
    const all: RunEvent[] = [];
    for await (const event of client.runs.events(created.run_id)) all.push(event);
    const states = all.filter((e) => e.type === "state").map((e) => e.data.state);
    expect(states).toEqual(["QUEUED", "INPROGRESS", "SUCCEEDED", "QUEUED", "INPROGRESS", "FAILED"]);

    // untilTerminal: false keeps following: it is still open after the last event.
    const controller = new AbortController();
    const followed: RunEvent[] = [];
    const done = (async () => {
      for await (const event of client.runs.events(
        created.run_id,
        { untilTerminal: false },
        { signal: controller.signal },
      )) {
        followed.push(event);
        if (followed.length === all.length) controller.abort();
      }
    })();
    await expect(done).rejects.toThrow(APIUserAbortError);
    expect(followed).toHaveLength(all.length);
  });

  it("pages through every run exactly once, following next_cursor", async () => {
    const name = "page-walk";
    const ids = new Set<string>();
    for (let i = 0; i < 25; i++) {
      const run = await client.runs.create({ prompt: `$ true # ${i}`, config: { name } });
      ids.add(run.run_id);
    }
    const first = await client.runs.list({ name, limit: 10, sort_by: "created_at" });
    expect(first).toBeInstanceOf(RunsPage);
    expect(first.runs).toHaveLength(10);
    expect(first.hasNextPage()).toBe(true);
    expect(first.page_info.next_cursor).toEqual(expect.any(String));

    const pages: number[] = [];
    for await (const page of first.iterPages()) pages.push(page.runs.length);
    expect(pages).toEqual([10, 10, 5]);

    const seen: string[] = [];
    for await (const run of first) seen.push(run.run_id);
    expect(seen).toHaveLength(25);
    expect(new Set(seen)).toEqual(ids);

    // The promise itself iterates too, without awaiting the first page.
    const again: string[] = [];
    for await (const run of client.runs.list({ name, limit: 10, sort_by: "created_at", sort_order: "asc" })) {
      again.push(run.run_id);
    }
    expect(again).toEqual([...seen].reverse());

    const third = await (await first.getNextPage()).getNextPage();
    expect(third.hasNextPage()).toBe(false);
    await expect(third.getNextPage()).rejects.toThrow(/no next page/);
  });

  it("exposes the raw response: status and headers, with or without the parsed body", async () => {
    const created = await client.runs.create({ prompt: "$ true" });
    const { data, response } = await client.runs.retrieve(created.run_id).withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(response.headers.get("x-request-id")).toBeTruthy();
    expect(data.run_id).toBe(created.run_id);

    const raw = await client.runs.create({ prompt: "$ true" }).asResponse();
    expect(raw.status).toBe(200);
    expect(raw.bodyUsed).toBe(false);
    expect((await raw.json()).state).toBe("QUEUED");
  });

  it("reaches routes outside the typed surface, including /healthz at the server root", async () => {
    expect(client.serverURL).toBe(t.url);
    expect(await client.get(`${client.serverURL}/healthz`)).toEqual({ status: "ok" });
    const doc = await client.get<{ openapi: string }>("openapi.json");
    expect(doc.openapi).toBe("3.1.0");
    // The create alias route, untyped: same retries and errors as the typed calls.
    const created = await client.post<{ run_id: string }>("/agent/run", { body: { prompt: "$ true" } });
    expect((await client.runs.retrieve(created.run_id)).run_id).toBe(created.run_id);
    const { response } = await client.get("/agent/runs", { query: { limit: 1 } }).withResponse();
    expect(response.status).toBe(200);
  });

  it("uses DISPATCH_API_KEY and DISPATCH_BASE_URL when not given, appending /api/v1 to a bare origin", async () => {
    const saved = { key: process.env.DISPATCH_API_KEY, url: process.env.DISPATCH_BASE_URL };
    process.env.DISPATCH_API_KEY = t.key;
    process.env.DISPATCH_BASE_URL = t.url;
    try {
      const fromEnv = new Dispatch();
      expect(fromEnv.baseURL).toBe(`${t.url}/api/v1`);
      expect((await fromEnv.runs.list({ limit: 1 })).runs).toHaveLength(1);
    } finally {
      for (const [name, value] of [
        ["DISPATCH_API_KEY", saved.key],
        ["DISPATCH_BASE_URL", saved.url],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});

describe("idempotency across a lost response", () => {
  /** Forwards to the live server, but reports the first POST's response as a dropped connection. */
  function losingFirstPost() {
    const keys: Array<string | null> = [];
    let lost = false;
    const fetchImpl: Fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (init?.method === "POST") {
        keys.push(new Headers(init.headers).get("idempotency-key"));
        if (!lost) {
          lost = true;
          await res.arrayBuffer(); // the server has done the work; only the answer is lost
          throw new TypeError("fetch failed", { cause: new Error("socket hang up") });
        }
      }
      return res;
    };
    return { fetch: fetchImpl, keys };
  }

  it("creates a run for a user named by id or email, or by Dispatch's on_behalf_of object", async () => {
    const email = `ann-${Date.now()}@example.com`;
    const ann = new Dispatch({
      apiKey: await t.newKey("team_default", { role: "member", displayName: "Ann", email }),
      baseURL: `${t.url}/api/v1`,
    });
    const uid = (await ann.runs.retrieve((await ann.runs.create({ prompt: "$ true" })).run_id)).creator.uid;
    for (const who of [uid, email]) {
      const run = await client.runs.retrieve(
        (await client.runs.create({ prompt: "$ true", on_behalf_of: who })).run_id,
      );
      expect(run.creator).toMatchObject({ uid, display_name: "Ann", email });
    }
    const creator = { type: "user" as const, uid: "github:octo", display_name: "Octo" };
    const created = await client.runs.create({
      prompt: "$ true",
      on_behalf_of: { creator, source: "GITHUB_WEBHOOK" },
    });
    expect((await client.runs.retrieve(created.run_id)).creator).toEqual(creator);
  });

  it("a retried create makes one run", async () => {
    const lossy = losingFirstPost();
    const dispatch = new Dispatch({ apiKey: t.key, baseURL: t.url, fetch: lossy.fetch });
    const prompt = `$ echo once ${crypto.randomUUID()}`;
    const created = await dispatch.runs.create({ prompt });
    expect(lossy.keys).toHaveLength(2);
    expect(lossy.keys[1]).toBe(lossy.keys[0]);
    const matching = await client.runs.list({ q: prompt.slice(2) });
    expect(matching.runs.map((r) => r.run_id)).toEqual([created.run_id]);
  });

  it("a retried follow-up is delivered once", async () => {
    const run = await client.runs.create({ prompt: "$ true" });
    await transcriptUntilDone(client, run.run_id);
    const lossy = losingFirstPost();
    const dispatch = new Dispatch({ apiKey: t.key, baseURL: t.url, fetch: lossy.fetch });
    const sent = await dispatch.runs.followup(run.run_id, { message: "$ echo follow-up once" });
    expect(lossy.keys).toEqual([lossy.keys[0], lossy.keys[0]]);
    const { events } = await client.runs.listEvents(run.run_id, { limit: 1000 });
    const followups = events.filter((e) => e.type === "followup");
    expect(followups.map((e) => e.data.followup_id)).toEqual([sent.followup_id]);
  });
});

describe("client.runs.events", () => {
  it("resumes with Last-Event-ID after the connection drops: nothing lost, nothing repeated", async () => {
    const streams: Array<{ lastEventId: string | null; after: string | null }> = [];
    // Each event-stream response is cut off after its first event.
    const cutting: Fetch = async (input, init) => {
      const res = await fetch(input, init);
      const headers = new Headers(init?.headers);
      if (headers.get("accept") !== "text/event-stream") return res;
      streams.push({
        lastEventId: headers.get("last-event-id"),
        after: new URL(String(input)).searchParams.get("after"),
      });
      return new Response(cutAfterFirstEvent(res.body!), { status: res.status, headers: res.headers });
    };
    const dispatch = new Dispatch({ apiKey: t.key, baseURL: t.url, fetch: cutting });
    const run = await client.runs.create({ prompt: "$ echo one\n$ echo two" });
    await waitFor(async () => (await client.runs.retrieve(run.run_id)).state === "SUCCEEDED", {
      what: "the run to finish",
    });
    const stream = dispatch.runs.events(run.run_id);
    const events: RunEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === "state" && isTerminalState(String(event.data.state))) break;
    }
    const { events: all } = await client.runs.listEvents(run.run_id, { limit: 1000 });
    expect(events).toEqual(all);
    expect(streams.length).toBe(all.length);
    expect(streams[0]!.lastEventId).toBeNull();
    expect(streams.slice(1).map((s) => Number(s.lastEventId))).toEqual(all.slice(0, -1).map((e) => e.seq));
    expect(stream.lastEventId).toBe(all.at(-1)!.seq);
  });

  it("stops waiting for events when the caller's signal aborts", async () => {
    const run = await client.runs.create({ prompt: "$ sleep 30" });
    const controller = new AbortController();
    const seen: string[] = [];
    const following = (async () => {
      for await (const event of client.runs.events(run.run_id, {}, { signal: controller.signal })) {
        seen.push(event.type);
        if (event.type === "tool_call") controller.abort();
      }
    })();
    await expect(following).rejects.toThrow(APIUserAbortError);
    expect(seen.at(-1)).toBe("tool_call");
    await client.runs.cancel(run.run_id);
  });
});

/** A body that delivers the stream up to the end of its first SSE message, then fails like a reset. */
function cutAfterFirstEvent(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let text = "";
  return new ReadableStream({
    async pull(controller) {
      const end = text.indexOf("\n\n", text.indexOf("\ndata:") + 1);
      if (text.includes("\ndata:") && end >= 0) {
        controller.enqueue(encoder.encode(text.slice(0, end + 2)));
        controller.error(new TypeError("terminated: connection reset"));
        await reader.cancel();
        return;
      }
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      text += decoder.decode(value, { stream: true });
    },
    async cancel() {
      await reader.cancel();
    },
  });
}
