import { describe, expect, it } from "vitest";
import type { StoreSuite } from "./suite.ts";

export function channelSettingsConformance(t: StoreSuite): void {
  describe("channel settings", () => {
    const here = { platform: "slack" as const, workspace: "T1", channel: "C1" };

    it("has no settings for a channel nobody configured", async () => {
      expect(await t.store.getChannelSettings(here)).toBeUndefined();
    });

    it("sets, replaces and clears a channel's default repository, remembering who and when", async () => {
      const set = await t.store.setChannelRepository(
        here,
        { repository: "acme/app", base: "develop" },
        "U1",
        "2026-01-01T00:00:00.000Z",
      );
      const expected = {
        ...here,
        repository: "acme/app",
        baseBranch: "develop",
        agent: null,
        updatedBy: "U1",
        updatedAt: "2026-01-01T00:00:00.000Z",
      };
      expect(set).toEqual(expected);
      expect(await t.store.getChannelSettings(here)).toEqual(expected);

      await t.store.setChannelRepository(here, { repository: "acme/api" }, "U2", "2026-01-02T00:00:00.000Z");
      expect(await t.store.getChannelSettings(here)).toEqual({
        ...here,
        repository: "acme/api",
        baseBranch: null,
        agent: null,
        updatedBy: "U2",
        updatedAt: "2026-01-02T00:00:00.000Z",
      });

      const cleared = await t.store.setChannelRepository(here, null, "U3", "2026-01-03T00:00:00.000Z");
      expect(cleared).toEqual({
        ...here,
        repository: null,
        baseBranch: null,
        agent: null,
        updatedBy: "U3",
        updatedAt: "2026-01-03T00:00:00.000Z",
      });
      expect(await t.store.getChannelSettings(here)).toEqual(cleared);
    });

    it("sets and clears a channel's default agent without touching its repository, and the other way round", async () => {
      const first = await t.store.setChannelAgent(here, "claude", "U1", "2026-02-01T00:00:00.000Z");
      expect(first).toEqual({
        ...here,
        repository: null,
        baseBranch: null,
        agent: "claude",
        updatedBy: "U1",
        updatedAt: "2026-02-01T00:00:00.000Z",
      });
      await t.store.setChannelRepository(
        here,
        { repository: "acme/app", base: "main" },
        "U2",
        "2026-02-02T00:00:00.000Z",
      );
      expect(await t.store.getChannelSettings(here)).toMatchObject({
        repository: "acme/app",
        agent: "claude",
      });
      const replaced = await t.store.setChannelAgent(here, "codex", "U3", "2026-02-03T00:00:00.000Z");
      expect(replaced).toEqual({
        ...here,
        repository: "acme/app",
        baseBranch: "main",
        agent: "codex",
        updatedBy: "U3",
        updatedAt: "2026-02-03T00:00:00.000Z",
      });
      const cleared = await t.store.setChannelAgent(here, null, "U4", "2026-02-04T00:00:00.000Z");
      expect(cleared).toMatchObject({
        repository: "acme/app",
        baseBranch: "main",
        agent: null,
        updatedBy: "U4",
      });
      expect(await t.store.getChannelSettings(here)).toEqual(cleared);
      expect(await t.store.getChannelSettings({ ...here, channel: "C2" })).toBeUndefined();
    });

    it("keeps channels apart by platform, workspace and channel", async () => {
      await t.store.setChannelRepository(here, { repository: "acme/app" }, "U1", "2026-01-01T00:00:00.000Z");
      for (const other of [
        { ...here, channel: "C2" },
        { ...here, workspace: "T2" },
        { ...here, platform: "github" as const },
      ]) {
        expect(await t.store.getChannelSettings(other)).toBeUndefined();
      }
      await t.store.setChannelRepository(
        { ...here, channel: "C2" },
        { repository: "acme/other" },
        "U1",
        "2026-01-01T00:00:00.000Z",
      );
      expect((await t.store.getChannelSettings(here))?.repository).toBe("acme/app");
    });
  });
}
