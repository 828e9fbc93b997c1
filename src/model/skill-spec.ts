/** A `skill_spec` read into where to look: a repo (`owner/repo`) and a skill name or a path to a SKILL.md. */
export interface SkillSpec {
  repo?: string;
  /** A skill name, or a path ending in SKILL.md. */
  target: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Every spelling parseSkillSpec accepts, as one regular expression for the API document (so a client
 * generating from it meets no refusal): a name, or owner/repo: then a name or a path to a SKILL.md whose
 * segments are never . or .. (a segment may start with a dot when more follows: .agents, ..x).
 */
const SEGMENT = "(?:[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\\.\\.[A-Za-z0-9._-]+)";
export const SKILL_SPEC_PATTERN = `^\\s*([A-Za-z0-9][A-Za-z0-9._-]*|${SEGMENT}/${SEGMENT}:/*([A-Za-z0-9][A-Za-z0-9._-]*|(${SEGMENT}/)*[A-Za-z0-9._-]*[Ss][Kk][Ii][Ll][Ll]\\.[Mm][Dd]))\\s*$`;
const SPEC = new RegExp(SKILL_SPEC_PATTERN);

export const VALID_SKILL_SPECS = "owner/repo:name, owner/repo:path/to/SKILL.md or a skill name";

/**
 * Parses a skill spec, or says what is wrong with it. The owner, repo and every path segment are joined
 * onto directories on the server, so `.` and `..` segments are refused: they would leave the skills
 * directory or the repository.
 */
export function parseSkillSpec(spec: string): SkillSpec | string {
  const trimmed = spec.trim();
  const colon = trimmed.indexOf(":");
  if (colon < 0) {
    if (NAME.test(trimmed) && SPEC.test(spec)) return { target: trimmed };
    return `skill "${spec}": expected ${VALID_SKILL_SPECS}`;
  }
  const repo = trimmed.slice(0, colon);
  const target = trimmed.slice(colon + 1).replace(/^\/+/, "");
  if (!/^[^/\s]+\/[^/\s]+$/.test(repo) || target === "") {
    return `skill "${spec}": expected owner/repo:name or owner/repo:path/to/SKILL.md`;
  }
  if (repo.split("/").some(isDotSegment)) {
    return `skill "${spec}": "${repo}" is not an owner/repo ("." and ".." are not names); expected ${VALID_SKILL_SPECS}`;
  }
  if (target.split(/[/\\]/).some(isDotSegment)) {
    return `skill "${spec}": "${target}" has a "." or ".." segment; expected a path inside the repository: ${VALID_SKILL_SPECS}`;
  }
  if (!target.toUpperCase().endsWith("SKILL.MD") && !NAME.test(target)) {
    return `skill "${spec}": "${target}" is neither a skill name nor a path to a SKILL.md`;
  }
  // What passed the checks above but is still outside the documented spelling (spaces, other characters).
  if (!SPEC.test(spec)) return `skill "${spec}": expected ${VALID_SKILL_SPECS}`;
  return { repo, target };
}

function isDotSegment(segment: string): boolean {
  return segment === "." || segment === "..";
}
