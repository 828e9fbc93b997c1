import { describe, expect, it } from "vitest";
import { DEFAULT_BASE_URL, Dispatch } from "../src/index.ts";
import { json, mockFetch } from "./support/mock-fetch.ts";

// What goes on the wire for a call: URL, query, headers and body, with a scripted fetch.

const KEY = `dsp_${"k".repeat(40)}`;

describe("requests", () => {
  it("resolve paths against baseURL and encode queries, repeating array values", async () => {
    const m = mockFetch(
      json(200, { runs: [], page_info: { has_next_page: false } }),
      json(200, {}),
      json(200, {}),
    );
    const client = new Dispatch({
      apiKey: KEY,
      baseURL: "https://dispatch.example.com/prefix/api/v1/",
      fetch: m.fetch,
    });
    await client.runs.list({ state: ["QUEUED", "FAILED"], limit: 5, name: "a b" });
    await client.get("/agent/runs/x/events", { query: { after: 3, skip: undefined, flag: true } });
    await client.runs.retrieve("id/with?odd#chars");
    expect(m.requests.map((r) => r.url.toString())).toEqual([
      "https://dispatch.example.com/prefix/api/v1/agent/runs?state=QUEUED&state=FAILED&limit=5&name=a+b",
      "https://dispatch.example.com/prefix/api/v1/agent/runs/x/events?after=3&flag=true",
      "https://dispatch.example.com/prefix/api/v1/agent/runs/id%2Fwith%3Fodd%23chars",
    ]);
    expect(client.serverURL).toBe("https://dispatch.example.com/prefix");
  });

  it("send JSON bodies with the key, and the key only to the API's own origin", async () => {
    const m = mockFetch(json(200, {}), json(200, {}), json(200, {}));
    const client = new Dispatch({ apiKey: KEY, baseURL: "http://127.0.0.1:9", fetch: m.fetch });
    await client.runs.create({ prompt: "hi", metadata: { a: "1" } });
    await client.get("http://127.0.0.1:9/healthz");
    await client.get("https://elsewhere.example.com/hook");
    const [create, health, elsewhere] = m.requests;
    expect(create!.method).toBe("POST");
    expect(create!.headers.get("content-type")).toBe("application/json");
    expect(create!.headers.get("accept")).toBe("application/json");
    expect(JSON.parse(create!.body!)).toEqual({ prompt: "hi", metadata: { a: "1" } });
    expect(health!.headers.get("authorization")).toBe(`Bearer ${KEY}`);
    expect(elsewhere!.headers.has("authorization")).toBe(false);
  });

  it("parse untyped responses by content type", async () => {
    const m = mockFetch(
      new Response("# HELP up\n", { headers: { "content-type": "text/plain" } }),
      new Response('{"ok":1}', { headers: { "content-type": "application/problem+json" } }),
      new Response(null, { status: 204 }),
    );
    const client = new Dispatch({ apiKey: KEY, baseURL: "http://127.0.0.1:9", fetch: m.fetch });
    expect(await client.get("http://127.0.0.1:9/metrics")).toBe("# HELP up\n");
    expect(await client.get("x")).toEqual({ ok: 1 });
    expect(await client.delete("y")).toBeUndefined();
  });

  it("default to the local server and derive clients with other options", async () => {
    const saved = process.env.DISPATCH_BASE_URL;
    delete process.env.DISPATCH_BASE_URL;
    try {
      const client = new Dispatch({ apiKey: KEY });
      expect(client.baseURL).toBe(DEFAULT_BASE_URL);
      expect(DEFAULT_BASE_URL).toBe("http://127.0.0.1:8080/api/v1");
      expect(client.maxRetries).toBe(2);
      expect(client.timeout).toBe(60_000);
      const patient = client.withOptions({ timeout: 5_000, maxRetries: 0 });
      expect([patient.baseURL, patient.apiKey, patient.timeout, patient.maxRetries]).toEqual([
        DEFAULT_BASE_URL,
        KEY,
        5_000,
        0,
      ]);
      expect(client.timeout).toBe(60_000);
    } finally {
      if (saved !== undefined) process.env.DISPATCH_BASE_URL = saved;
    }
  });
});
