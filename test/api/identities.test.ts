import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/auth/bootstrap.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";

// /agent/identities: a team's service accounts, for admin keys only.

let t: TestDispatch;

beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
});
afterAll(async () => {
  await t?.stop();
});

const as = (key: string) => ({ authorization: `Bearer ${key}` });
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("/api/v1/agent/identities", () => {
  it("creates, lists, gets, updates and deletes a service account", async () => {
    const created = await t.api("POST", "/api/v1/agent/identities", {
      name: "Reviewer bot",
      description: "Reviews pull requests",
      skills: ["acme/tools:review"],
      secrets: [],
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual({
      uid: expect.stringMatching(/^sa_/),
      name: "Reviewer bot",
      available: true,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: created.body.created_at,
      default_runner_uid: "",
      memory: { attached_stores: [], auto_memory: { enabled: false } },
      description: "Reviews pull requests",
      skills: ["acme/tools:review"],
      secrets: [],
    });
    const uid = created.body.uid;

    const listed = await t.api("GET", "/api/v1/agent/identities");
    expect(listed.status).toBe(200);
    // The bootstrap admin is the team's default identity and comes first.
    expect(listed.body.agents.map((a: { uid: string }) => a.uid)).toEqual(["admin", uid]);

    expect((await t.api("GET", `/api/v1/agent/identities/${uid}`)).body).toEqual(created.body);

    const updated = await t.api("PUT", `/api/v1/agent/identities/${uid}`, {
      name: "Reviewer",
      description: "",
      prompt: "Be terse.",
      base_model: "anthropic/claude-sonnet-4-5",
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toEqual({
      ...created.body,
      updated_at: expect.stringMatching(TIMESTAMP),
      name: "Reviewer",
      description: undefined,
      prompt: "Be terse.",
      base_model: "anthropic/claude-sonnet-4-5",
    });
    expect("description" in updated.body).toBe(false);
    // A JSON Content-Type with no body changes nothing.
    const unchanged = await t.api("PUT", `/api/v1/agent/identities/${uid}`, "", {
      "content-type": "application/json",
    });
    expect(unchanged.status, unchanged.text).toBe(200);
    expect(unchanged.body).toEqual(updated.body);

    const deleted = await t.api("DELETE", `/api/v1/agent/identities/${uid}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expect((await t.api("GET", `/api/v1/agent/identities/${uid}`)).status).toBe(404);
    expect((await t.api("DELETE", `/api/v1/agent/identities/${uid}`)).status).toBe(404);
  });

  it("deleting an identity revokes its API keys", async () => {
    const created = await t.api("POST", "/api/v1/agent/identities", { name: "CI" });
    const uid = created.body.uid;
    const { key } = await createApiKey(t.dispatch.store, { principalUid: uid, role: "member" });
    expect((await t.api("GET", "/api/v1/agent/runs", undefined, as(key))).status).toBe(200);

    expect((await t.api("DELETE", `/api/v1/agent/identities/${uid}`)).status).toBe(204);
    // Revoked in this process: the key cache forgets it at once; the wait only covers a slow machine.
    const refused = await waitFor(
      async () => {
        const res = await t.api("GET", "/api/v1/agent/runs", undefined, as(key));
        return res.status === 401 ? res : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: "the deleted identity's key to be refused" },
    );
    expect(refused.body.error_code).toBe("authentication_required");
  });

  it("refuses to delete the default identity, saying why", async () => {
    const res = await t.api("DELETE", "/api/v1/agent/identities/admin");
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe("invalid_request");
    expect(res.body.detail).toContain("default identity");
    expect((await t.api("GET", "/api/v1/agent/runs")).status).toBe(200);
  });

  it("answers 404 for an unknown uid, a user principal and another team's identity", async () => {
    expect((await t.api("GET", "/api/v1/agent/identities/sa_nothing")).status).toBe(404);
    expect((await t.api("PUT", "/api/v1/agent/identities/sa_nothing", { name: "x" })).status).toBe(404);
    const otherAdmin = await t.newKey("team-b", { role: "admin" });
    const theirs = await t.api("POST", "/api/v1/agent/identities", { name: "Theirs" }, as(otherAdmin));
    expect(theirs.status).toBe(201);
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await t.api(
        method,
        `/api/v1/agent/identities/${theirs.body.uid}`,
        method === "PUT" ? {} : undefined,
      );
      expect(res.status, method).toBe(404);
    }
    const mine = await t.api("GET", "/api/v1/agent/identities");
    expect(mine.body.agents.map((a: { uid: string }) => a.uid)).not.toContain(theirs.body.uid);
    const theirList = await t.api("GET", "/api/v1/agent/identities", undefined, as(otherAdmin));
    expect(theirList.body.agents.map((a: { uid: string }) => a.uid)).toEqual([theirs.body.uid]);
  });

  it("needs an admin key: member and read keys get 403 saying so", async () => {
    const member = await t.newKey("team_default", { role: "member" });
    const read = await t.newKey("team_default", { role: "read" });
    for (const key of [member, read]) {
      for (const [method, body] of [
        ["GET", undefined],
        ["POST", { name: "x" }],
      ] as const) {
        const res = await t.api(method, "/api/v1/agent/identities", body, as(key));
        expect(res.status, `${method} ${res.text}`).toBe(403);
        expect(res.body.error_code).toBe("not_authorized");
        expect(res.body.detail).toContain("admin key");
      }
      expect((await t.api("DELETE", "/api/v1/agent/identities/admin", undefined, as(key))).status).toBe(403);
    }
  });

  it("rejects bad input naming the field", async () => {
    const noName = await t.api("POST", "/api/v1/agent/identities", { description: "x" });
    expect(noName.status).toBe(400);
    expect(noName.body.detail).toContain("name");
    const secrets = await t.api("POST", "/api/v1/agent/identities", {
      name: "x",
      secrets: [{ name: "TOKEN" }],
    });
    expect(secrets.status).toBe(400);
    expect(secrets.body.detail).toContain("no managed secrets");
    const skill = await t.api("POST", "/api/v1/agent/identities", { name: "x", skills: ["../etc:passwd"] });
    expect(skill.status).toBe(400);
    expect(skill.body.detail).toContain("skills.0");
    const noBody = await t.api("POST", "/api/v1/agent/identities", "", {
      "content-type": "application/json",
    });
    expect(noBody.status).toBe(400);
    expect(noBody.body.detail).toContain("JSON object");
  });
});
