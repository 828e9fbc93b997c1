import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { NewWebSession } from "../../../src/model/web-session.ts";
import type { StoreSuite } from "./suite.ts";

const hash = (text: string) => createHash("sha256").update(text).digest("hex");
const T0 = "2026-03-01T10:00:00.000Z";
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();

export function webSessionsConformance(t: StoreSuite): void {
  describe("web sign-in", () => {
    const person = {
      id: "slack:T1:U1",
      teamId: "t1",
      type: "user" as const,
      displayName: "Ada",
      email: null,
    };

    const newLink = async (expiresInMinutes = 10) => {
      await t.store.ensurePrincipal(person);
      const token = randomBytes(16).toString("hex");
      await t.store.createLoginLink({
        tokenHash: hash(token),
        principalId: person.id,
        teamId: "t1",
        role: "member",
        createdAt: T0,
        expiresAt: at(expiresInMinutes),
      });
      return hash(token);
    };
    const newSession = (minute: number): NewWebSession => ({
      idHash: hash(randomBytes(16).toString("hex")),
      csrfToken: randomBytes(16).toString("hex"),
      createdAt: at(minute),
      expiresAt: at(minute + 720),
    });

    it("redeems a link once, opening a session for its principal and team", async () => {
      const link = await newLink();
      const session = newSession(1);
      const first = await t.store.redeemLoginLink(link, session);
      expect(first).toEqual({
        kind: "signed_in",
        session: {
          idHash: session.idHash,
          principal: person,
          team: { id: "t1", name: "Team one" },
          role: "member",
          csrfToken: session.csrfToken,
          createdAt: at(1),
          expiresAt: at(721),
        },
      });
      expect(await t.store.redeemLoginLink(link, newSession(2))).toEqual({ kind: "refused", reason: "used" });
      expect(await t.store.findWebSession(session.idHash, at(3))).toEqual(
        first.kind === "signed_in" ? first.session : undefined,
      );
    });

    it("reads a link, naming whom it signs in, without spending it", async () => {
      const link = await newLink();
      const unused = { principal: { id: person.id, displayName: "Ada" }, expiresAt: at(10), usedAt: null };
      expect(await t.store.findLoginLink(link)).toEqual(unused);
      expect(await t.store.findLoginLink(link)).toEqual(unused);
      expect((await t.store.redeemLoginLink(link, newSession(1))).kind).toBe("signed_in");
      expect(await t.store.findLoginLink(link)).toEqual({ ...unused, usedAt: at(1) });
      expect(await t.store.findLoginLink(hash("nope"))).toBeUndefined();
    });

    it("refuses an expired link and an unknown one, opening nothing", async () => {
      const link = await newLink(10);
      const late = newSession(10);
      expect(await t.store.redeemLoginLink(link, late)).toEqual({ kind: "refused", reason: "expired" });
      expect(await t.store.findWebSession(late.idHash, at(10))).toBeUndefined();
      expect(await t.store.redeemLoginLink(hash("nope"), newSession(1))).toEqual({
        kind: "refused",
        reason: "unknown",
      });
    });

    it("lets exactly one of many concurrent redemptions of a link sign in", async () => {
      const link = await newLink();
      const attempts = Array.from({ length: 8 }, () => newSession(1));
      const results = await Promise.all(attempts.map((s) => t.store.redeemLoginLink(link, s)));
      expect(results.filter((r) => r.kind === "signed_in")).toHaveLength(1);
      expect(results.filter((r) => r.kind === "refused" && r.reason === "used")).toHaveLength(7);
      const live = await Promise.all(attempts.map((s) => t.store.findWebSession(s.idHash, at(2))));
      expect(live.filter(Boolean)).toHaveLength(1);
    });

    it("ends a session when it expires or is revoked", async () => {
      const session = newSession(1);
      await t.store.redeemLoginLink(await newLink(), session);
      expect(await t.store.findWebSession(session.idHash, at(720))).toBeDefined();
      expect(await t.store.findWebSession(session.idHash, at(721))).toBeUndefined();
      expect(await t.store.revokeWebSession(session.idHash, at(5))).toBe(true);
      expect(await t.store.findWebSession(session.idHash, at(6))).toBeUndefined();
      expect(await t.store.revokeWebSession(session.idHash, at(7))).toBe(false);
    });

    it("ends a session opened with an API key when that key is revoked", async () => {
      const admin = { id: "p-admin", teamId: "t2", type: "user" as const, displayName: "Root", email: null };
      await t.store.ensurePrincipal(admin);
      await t.store.insertApiKey({
        id: "key-1",
        principalId: admin.id,
        name: "k",
        role: "admin",
        hash: hash("dsp_key"),
        prefix: "dsp_key",
        createdAt: T0,
      });
      const session = await t.store.createKeyWebSession({
        ...newSession(1),
        principalId: admin.id,
        teamId: "t2",
        role: "admin",
        apiKeyId: "key-1",
      });
      expect(session.team).toEqual({ id: "t2", name: "Team two" });
      expect(session.role).toBe("admin");
      expect(await t.store.findWebSession(session.idHash, at(2))).toEqual(session);
      await t.store.revokeApiKey("key-1", at(3));
      expect(await t.store.findWebSession(session.idHash, at(4))).toBeUndefined();
    });

    it("prunes expired links and ended sessions", async () => {
      const session = newSession(1);
      await t.store.redeemLoginLink(await newLink(), session);
      await newLink();
      expect(await t.store.pruneWebSignIns(at(5))).toBe(0);
      expect(await t.store.pruneWebSignIns(at(800))).toBe(3);
      expect(await t.store.findWebSession(session.idHash, at(2))).toBeUndefined();
    });

    it("counts one team's runs by state", async () => {
      await t.create({ teamId: "t1" });
      await t.create({ teamId: "t1" });
      await t.create({ teamId: "t2" });
      expect((await t.store.countRunsByState("t1")).QUEUED).toBe(2);
      expect((await t.store.countRunsByState("t2")).QUEUED).toBe(1);
      expect((await t.store.countRunsByState()).QUEUED).toBe(3);
    });
  });
}
