import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { TRIGGER_EVENTS } from "../../../src/integrations/github/webhook-events.ts";

/** The App manifest (manifests/github-app.json) asks for what Dispatch uses, and no more. */
describe("the GitHub App manifest", () => {
  const manifest = JSON.parse(
    readFileSync(new URL("../../../manifests/github-app.json", import.meta.url), "utf8"),
  );

  it("subscribes to exactly the events Dispatch acts on", () => {
    expect([...manifest.default_events].sort()).toEqual([...TRIGGER_EVENTS].sort());
  });

  it("asks for the permissions those events' handling needs", () => {
    expect(manifest.default_permissions).toEqual({
      issues: "write",
      pull_requests: "write",
      metadata: "read",
      contents: "write",
      checks: "read",
      actions: "read",
    });
  });
});
