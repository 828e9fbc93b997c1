/** The prompt's first non-empty line, trimmed, cut to 80 characters with "…"; a skill-only run's skill name. */
export function deriveTitle(prompt: string, skillName?: string): string {
  const line = prompt
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l !== "");
  if (!line) return skillName ?? "Untitled run";
  const chars = [...line];
  return chars.length <= 80 ? line : `${chars.slice(0, 79).join("")}…`;
}

/** `owner/repo:name` → name; `owner/repo:path/to/name/SKILL.md` → name. */
export function skillNameOf(spec: string): string {
  const path = spec.includes(":") ? spec.slice(spec.indexOf(":") + 1) : spec;
  const parts = path.split("/").filter(Boolean);
  if (parts.at(-1)?.toUpperCase() === "SKILL.MD") parts.pop();
  return parts.at(-1) ?? spec;
}
