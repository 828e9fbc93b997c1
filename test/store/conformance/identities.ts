import { describe, expect, it } from "vitest";
import type { AgentIdentity } from "../../../src/model/identity.ts";
import type { StoreSuite } from "./suite.ts";

export function identitiesConformance(t: StoreSuite): void {
  describe("agent identities", () => {
    const identity = (over: Partial<AgentIdentity> = {}): AgentIdentity => ({
      id: "sa_1",
      teamId: "t1",
      name: "Reviewer",
      description: null,
      prompt: null,
      baseModel: null,
      skills: [],
      createdAt: "2026-01-01T00:00:00.000Z",
      ...over,
    });

    it("creates, lists per team (oldest first), gets and updates service accounts only", async () => {
      const a = await t.store.createIdentity(identity({ skills: ["acme/tools:lint"] }));
      expect(a).toEqual(identity({ skills: ["acme/tools:lint"] }));
      await t.store.createIdentity(
        identity({ id: "sa_2", name: "Second", createdAt: "2026-01-02T00:00:00.000Z" }),
      );
      await t.store.createIdentity(identity({ id: "sa_other", teamId: "t2" }));
      await t.store.ensurePrincipal({ id: "u1", teamId: "t1", type: "user", displayName: "U", email: null });

      expect((await t.store.listIdentities("t1")).map((i) => i.id)).toEqual(["sa_1", "sa_2"]);
      expect(await t.store.getIdentity("t2", "sa_1")).toBeUndefined();
      expect(await t.store.getIdentity("t1", "u1")).toBeUndefined();

      const updated = await t.store.updateIdentity("t1", "sa_1", {
        description: "reviews",
        baseModel: "fast",
      });
      expect(updated).toMatchObject({ name: "Reviewer", description: "reviews", baseModel: "fast" });
      // An update records when it happened (Oz's updated_at).
      expect(Date.parse(updated!.updatedAt!)).toBeGreaterThan(Date.parse(a.createdAt));
      expect(await t.store.updateIdentity("t1", "sa_1", { description: null, skills: [] })).toMatchObject({
        description: null,
        baseModel: "fast",
        skills: [],
      });
      expect(await t.store.updateIdentity("t2", "sa_1", { name: "x" })).toBeUndefined();
    });

    it("deletes an identity and revokes its keys in one step; another team cannot", async () => {
      await t.store.createIdentity(identity());
      await t.store.insertApiKey({
        id: "k1",
        principalId: "sa_1",
        name: "ci",
        role: "member",
        hash: "h1",
        prefix: "dsp_aaaaaa",
        createdAt: "2026-01-01T00:00:00.000Z",
      });
      const revoked: string[] = [];
      t.store.signals.on("api_key_revoked", (id) => revoked.push(id));

      expect(await t.store.deleteIdentity("t2", "sa_1", "2026-01-03T00:00:00.000Z")).toBeUndefined();
      expect(await t.store.findCallerByKeyHash("h1")).toBeDefined();

      expect(await t.store.deleteIdentity("t1", "sa_1", "2026-01-03T00:00:00.000Z")).toEqual({
        revokedKeyIds: ["k1"],
      });
      expect(revoked).toEqual(["k1"]);
      expect(await t.store.findCallerByKeyHash("h1")).toBeUndefined();
      expect(await t.store.getIdentity("t1", "sa_1")).toBeUndefined();
      expect(await t.store.listIdentities("t1")).toEqual([]);
      expect(await t.store.deleteIdentity("t1", "sa_1", "2026-01-04T00:00:00.000Z")).toBeUndefined();
      // A key added to a deleted identity afterwards does not authenticate either.
      await t.store.insertApiKey({
        id: "k2",
        principalId: "sa_1",
        name: "late",
        role: "member",
        hash: "h2",
        prefix: "dsp_bbbbbb",
        createdAt: "2026-01-05T00:00:00.000Z",
      });
      expect(await t.store.findCallerByKeyHash("h2")).toBeUndefined();
    });
  });
}
