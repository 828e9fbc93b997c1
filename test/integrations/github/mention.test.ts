import { describe, expect, it } from "vitest";
import { commandText, mentionsHandle } from "../../../src/integrations/github/mention.ts";

describe("mentionsHandle / commandText", () => {
  it.each([
    ["@dispatch fix it", true, "fix it"],
    ["Hi @Dispatch, fix the tests", true, "Hi, fix the tests"],
    ["@dispatch cancel", true, "cancel"],
    ["thanks!\n\n@dispatch new $ echo hi [model=m1]", true, "thanks!\n\n new $ echo hi [model=m1]"],
    ["```\n@dispatch in a fence\n```", false, ""],
    ["~~~sh\n@dispatch in a tilde fence\n~~~", false, ""],
    ["> @dispatch quoted\n\nI agree", false, ""],
    ["  > @dispatch quoted with indent", false, ""],
    ["see `@dispatch help`", false, ""],
    ["me@dispatch.dev", false, ""],
    ["@dispatch-team please look", false, ""],
    ["@dispatchbot go", false, ""],
    ["@dispatch[bot] go", false, ""],
    ["```\ncode\n```\n@dispatch after the fence", true, "```\ncode\n```\n after the fence"],
  ])("%j", (body, mentioned, command) => {
    expect(mentionsHandle(body, "dispatch")).toBe(mentioned);
    if (mentioned) expect(commandText(body, "dispatch")).toBe(command.trim());
  });
});
