import type { HarnessContext } from "./harness.ts";

/**
 * For a harness that never looks at images (the scripted one): says once per create or follow-up, in the
 * transcript, which images came with it and that they were not looked at, so none go unmentioned.
 */
export async function noteUnseenImages(ctx: HarnessContext, harness: string): Promise<void> {
  if (!ctx.attachments) return;
  const attachments = await ctx.attachments();
  if (attachments.length === 0) return;
  const noted = new Set(
    ((await ctx.transcript?.()) ?? [])
      .filter((e) => e.type === "log" && e.data.phase === "attachments")
      .map((e) => String(e.data.attachments_of)),
  );
  const groups = new Map<string, string[]>();
  for (const a of attachments) {
    const group = a.followupId ?? "create";
    if (!noted.has(group)) groups.set(group, [...(groups.get(group) ?? []), a.fileName]);
  }
  for (const [group, names] of groups) {
    const n = names.length;
    await ctx.emit("log", {
      level: "info",
      phase: "attachments",
      attachments_of: group,
      message: `${n} image${n === 1 ? " was" : "s were"} attached (${names.join(", ")}); the ${harness} harness does not look at images`,
    });
  }
}
