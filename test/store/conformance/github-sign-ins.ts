import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { NewWebSession } from "../../../src/model/web-session.ts";
import type { StoreSuite } from "./suite.ts";

const hash = (text: string) => createHash("sha256").update(text).digest("hex");
const T0 = "2026-03-01T10:00:00.000Z";
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();

export function githubSignInsConformance(t: StoreSuite): void {
  describe("GitHub sign-in", () => {
    const octocat = {
      id: "github:octocat",
      teamId: "t1",
      type: "user" as const,
      displayName: "octocat",
      email: null,
    };
    const mallory = { ...octocat, id: "github:mallory", displayName: "mallory" };
    let seq = 0;

    /** A browser's pending sign-in: its cookie's hash and its code. */
    const start = async (expiresInMinutes = 10) => {
      const browserHash = hash(randomBytes(16).toString("hex"));
      const code = `C${String(++seq).padStart(3, "0")}-${randomBytes(2).toString("hex").toUpperCase()}`;
      expect(
        await t.store.createGitHubSignIn({
          browserHash,
          code,
          createdAt: T0,
          expiresAt: at(expiresInMinutes),
        }),
      ).toBe(true);
      return { browserHash, code };
    };
    const approval = (who: typeof octocat, minute: number) => ({
      principalId: who.id,
      teamId: "t1",
      role: "member" as const,
      at: at(minute),
    });
    const newSession = (minute: number): NewWebSession => ({
      idHash: hash(randomBytes(16).toString("hex")),
      csrfToken: randomBytes(16).toString("hex"),
      createdAt: at(minute),
      expiresAt: at(minute + 720),
    });

    it("approves a code for its commenter, then the browser redeems it once into a session", async () => {
      await t.store.ensurePrincipal(octocat);
      const { browserHash, code } = await start();
      expect(await t.store.findGitHubSignIn(browserHash)).toEqual({
        code,
        createdAt: T0,
        expiresAt: at(10),
        approvedAt: null,
        approvedAs: null,
        usedAt: null,
      });
      expect(await t.store.redeemGitHubSignIn(browserHash, newSession(1))).toEqual({
        kind: "refused",
        reason: "pending",
      });
      expect(await t.store.approveGitHubSignIn(code, approval(octocat, 2))).toEqual({ kind: "approved" });
      // A redelivered comment approves again; nobody else can take the code over.
      expect(await t.store.approveGitHubSignIn(code, approval(octocat, 3))).toEqual({ kind: "approved" });
      await t.store.ensurePrincipal(mallory);
      expect(await t.store.approveGitHubSignIn(code, approval(mallory, 3))).toEqual({
        kind: "refused",
        reason: "used",
      });
      // Reading the approved sign-in names whom it was approved for, and spends nothing.
      expect(await t.store.findGitHubSignIn(browserHash)).toMatchObject({
        approvedAt: at(2),
        approvedAs: { id: "github:octocat", displayName: "octocat" },
        usedAt: null,
      });

      const session = newSession(4);
      const redeemed = await t.store.redeemGitHubSignIn(browserHash, session);
      expect(redeemed).toEqual({
        kind: "signed_in",
        session: {
          idHash: session.idHash,
          principal: octocat,
          team: { id: "t1", name: "Team one" },
          role: "member",
          csrfToken: session.csrfToken,
          createdAt: at(4),
          expiresAt: at(724),
        },
      });
      expect(await t.store.findWebSession(session.idHash, at(5))).toEqual(
        redeemed.kind === "signed_in" ? redeemed.session : undefined,
      );
      expect((await t.store.findGitHubSignIn(browserHash))?.usedAt).toBe(at(4));
      expect(await t.store.redeemGitHubSignIn(browserHash, newSession(5))).toEqual({
        kind: "refused",
        reason: "used",
      });
      expect(await t.store.approveGitHubSignIn(code, approval(octocat, 5))).toEqual({
        kind: "refused",
        reason: "used",
      });
    });

    it("refuses unknown and expired codes and browsers, opening nothing", async () => {
      await t.store.ensurePrincipal(octocat);
      expect(await t.store.approveGitHubSignIn("NOPE-NOPE", approval(octocat, 1))).toEqual({
        kind: "refused",
        reason: "unknown",
      });
      expect(await t.store.redeemGitHubSignIn(hash("nobody"), newSession(1))).toEqual({
        kind: "refused",
        reason: "unknown",
      });
      expect(await t.store.findGitHubSignIn(hash("nobody"))).toBeUndefined();

      const late = await start(10);
      expect(await t.store.approveGitHubSignIn(late.code, approval(octocat, 10))).toEqual({
        kind: "refused",
        reason: "expired",
      });
      const approvedThenLate = await start(10);
      await t.store.approveGitHubSignIn(approvedThenLate.code, approval(octocat, 9));
      const session = newSession(10);
      expect(await t.store.redeemGitHubSignIn(approvedThenLate.browserHash, session)).toEqual({
        kind: "refused",
        reason: "expired",
      });
      expect(await t.store.findWebSession(session.idHash, at(10))).toBeUndefined();
    });

    it("stores nothing for a code or browser that is taken already", async () => {
      const first = await start();
      const again = { createdAt: T0, expiresAt: at(10) };
      expect(
        await t.store.createGitHubSignIn({ ...again, browserHash: hash("other"), code: first.code }),
      ).toBe(false);
      expect(
        await t.store.createGitHubSignIn({ ...again, browserHash: first.browserHash, code: "ZZZZ-ZZZZ" }),
      ).toBe(false);
      expect(await t.store.findGitHubSignIn(hash("other"))).toBeUndefined();
    });

    it("lets exactly one of many concurrent redemptions sign in", async () => {
      await t.store.ensurePrincipal(octocat);
      const { browserHash, code } = await start();
      await t.store.approveGitHubSignIn(code, approval(octocat, 1));
      const attempts = Array.from({ length: 6 }, () => newSession(2));
      const results = await Promise.all(attempts.map((s) => t.store.redeemGitHubSignIn(browserHash, s)));
      expect(results.filter((r) => r.kind === "signed_in")).toHaveLength(1);
      expect(results.filter((r) => r.kind === "refused" && r.reason === "used")).toHaveLength(5);
    });

    it("prunes expired sign-ins with the other web sign-in state", async () => {
      const { browserHash } = await start(10);
      expect(await t.store.pruneWebSignIns(at(5))).toBe(0);
      expect(await t.store.pruneWebSignIns(at(11))).toBe(1);
      expect(await t.store.findGitHubSignIn(browserHash)).toBeUndefined();
    });
  });
}
