import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import type { SkillsSettings } from "../config-file.ts";
import { parseSkillSpec } from "../model/skill-spec.ts";
import { resolveInside } from "../sandbox/sandbox.ts";
import { gitClone } from "./git.ts";

/**
 * Skills: a SKILL.md (YAML frontmatter `name`, `description`; the body is the agent's base prompt) found
 * from a `skill_spec`:
 *   - `owner/repo:name` → `.agents/skills/<name>/SKILL.md`, `.claude/skills/<name>/SKILL.md`,
 *     `skills/<name>/SKILL.md` or `<name>/SKILL.md` in the repo;
 *   - `owner/repo:path/to/SKILL.md` → that file in the repo;
 *   - `name` alone → the same folders under each configured skills directory.
 * The repo is, in order: `skills.repos[owner/repo]` (a local path, read in place, or a git URL, cloned
 * into a cache), `<dir>/<owner>/<repo>` under a configured skills directory, else
 * https://github.com/owner/repo when `skills.github` is on. Local paths and file:// URLs are read at
 * create time (so an unknown skill is a 400); remote repos only at execution time.
 */
export interface ResolvedSkill {
  name: string;
  description?: string;
  /** The SKILL.md body: the agent's base prompt. */
  body: string;
  /** Where it came from, as a skill spec (`owner/repo:path/SKILL.md`); shown on the run. */
  fullPath: string;
}

export type SkillLookup =
  | { kind: "found"; skill: ResolvedSkill }
  | { kind: "not_found"; message: string }
  /** Only resolvable by fetching a remote repo: done at execution time. */
  | { kind: "deferred" };

export const SKILL_FOLDERS = [".agents/skills", ".claude/skills", "skills", ""];

const CACHE_TTL_MS = 5 * 60 * 1000;

export class SkillResolver {
  private readonly settings: SkillsSettings;
  private readonly cacheDir: string;
  private readonly baseDir: string;
  private readonly clones = new Map<string, { at: number; dir: Promise<string> }>();

  constructor(settings: SkillsSettings, opts: { cacheDir: string; baseDir?: string }) {
    this.settings = settings;
    this.cacheDir = opts.cacheDir;
    this.baseDir = opts.baseDir ?? process.cwd();
  }

  /** At create time: local sources only; `deferred` when the spec needs a remote fetch. */
  resolveNow(spec: string): Promise<SkillLookup> {
    return this.lookup(spec, false, new AbortController().signal);
  }

  /** At execution time: remote repos are fetched too. */
  resolve(spec: string, signal: AbortSignal): Promise<SkillLookup> {
    return this.lookup(spec, true, signal);
  }

  private async lookup(spec: string, remote: boolean, signal: AbortSignal): Promise<SkillLookup> {
    // Checked at create too; checked again here because a run's spec is joined onto server paths.
    const parsed = parseSkillSpec(spec);
    if (typeof parsed === "string") return { kind: "not_found", message: parsed };
    const { repo, target } = parsed;
    if (!repo) {
      if (this.settings.dirs.length === 0) {
        return {
          kind: "not_found",
          message: `skill "${spec}" not found: no skills directory is configured (skills.dirs in dispatch.config.yaml); use owner/repo:name`,
        };
      }
      for (const dir of this.settings.dirs) {
        const found = await findIn(this.abs(dir), target, (rel) => rel);
        if (found) return { kind: "found", skill: found };
      }
      return {
        kind: "not_found",
        message: `skill "${spec}" not found in the configured skills directories (looked for ${candidates(target).join(", ")})`,
      };
    }

    let root: string | undefined;
    const configured = this.settings.repos[repo];
    if (configured !== undefined) {
      if (isRemote(configured)) {
        if (!remote && !configured.startsWith("file:")) return { kind: "deferred" };
        try {
          root = await this.clone(repo, configured, signal);
        } catch (err) {
          return {
            kind: "not_found",
            message: `skill "${spec}": could not fetch ${repo} from ${configured}: ${err instanceof Error ? err.message : String(err)}`,
          };
        }
      } else {
        root = this.abs(configured);
        if (!existsSync(root)) {
          return {
            kind: "not_found",
            message: `skill "${spec}": ${repo} is configured at ${root}, which does not exist`,
          };
        }
      }
    } else {
      for (const dir of this.settings.dirs) {
        const candidate = join(this.abs(dir), repo);
        if (existsSync(candidate)) {
          root = candidate;
          break;
        }
      }
    }
    if (root === undefined) {
      if (!this.settings.github) {
        return {
          kind: "not_found",
          message: `skill "${spec}": the repository ${repo} is not configured (skills.repos or skills.dirs in dispatch.config.yaml)`,
        };
      }
      if (!remote) return { kind: "deferred" };
      try {
        root = await this.clone(repo, `https://github.com/${repo}.git`, signal);
      } catch (err) {
        return {
          kind: "not_found",
          message: `skill "${spec}": could not fetch https://github.com/${repo}: ${err instanceof Error ? err.message : String(err)}`,
        };
      }
    }
    const found = await findIn(root, target, (rel) => `${repo}:${rel}`);
    if (found) return { kind: "found", skill: found };
    return {
      kind: "not_found",
      message: target.toUpperCase().endsWith("SKILL.MD")
        ? `skill "${spec}" not found: ${repo} has no ${target}`
        : `skill "${spec}" not found in ${repo} (looked for ${candidates(target).join(", ")})`,
    };
  }

  private abs(path: string): string {
    return resolve(this.baseDir, path);
  }

  /** A shallow clone in the cache, shared by concurrent callers and refreshed after a few minutes. */
  private clone(repo: string, url: string, signal: AbortSignal): Promise<string> {
    const cached = this.clones.get(repo);
    if (cached && Date.now() - cached.at < CACHE_TTL_MS) return cached.dir;
    const dir = (async () => {
      const dest = join(this.cacheDir, repo.replace("/", "__"));
      const temp = `${dest}.tmp-${process.pid}-${Date.now()}`;
      await mkdir(this.cacheDir, { recursive: true });
      const result = await gitClone({ url, dest: temp, depth: 1, timeoutMs: 120_000, signal });
      if (result.exitCode !== 0) {
        await rm(temp, { recursive: true, force: true });
        throw new Error(
          result.output.trim().split("\n").slice(-3).join(" ") || `git exited ${result.exitCode}`,
        );
      }
      await rm(dest, { recursive: true, force: true });
      await rename(temp, dest);
      return dest;
    })();
    this.clones.set(repo, { at: Date.now(), dir });
    dir.catch(() => this.clones.delete(repo));
    return dir;
  }
}

function candidates(name: string): string[] {
  return SKILL_FOLDERS.map((f) => (f ? `${f}/${name}/SKILL.md` : `${name}/SKILL.md`));
}

async function findIn(
  root: string,
  target: string,
  fullPath: (rel: string) => string,
): Promise<ResolvedSkill | undefined> {
  const paths = target.toUpperCase().endsWith("SKILL.MD") ? [target] : candidates(target);
  for (const rel of paths) {
    let file: string;
    try {
      file = await resolveInside(root, rel);
      if (!(await stat(file)).isFile()) continue;
    } catch {
      continue;
    }
    const text = await readFile(file, "utf8");
    const { meta, body } = parseSkillMd(text);
    const folder = basename(dirname(file));
    const relPath = relative(root, file).split("\\").join("/");
    return {
      name: typeof meta.name === "string" && meta.name.trim() ? meta.name.trim() : folder,
      ...(typeof meta.description === "string" && meta.description.trim()
        ? { description: meta.description.trim() }
        : {}),
      body: body.trim(),
      fullPath: fullPath(isAbsolute(relPath) ? rel : relPath),
    };
  }
  return undefined;
}

/** Splits a SKILL.md into its YAML frontmatter (between `---` lines) and its body. */
export function parseSkillMd(text: string): { meta: Record<string, unknown>; body: string } {
  const match = text.replace(/^\uFEFF/, "").match(/^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$/);
  if (!match) return { meta: {}, body: text };
  let meta: unknown;
  try {
    meta = parseYaml(match[1] ?? "");
  } catch {
    meta = {};
  }
  return {
    meta: meta && typeof meta === "object" ? (meta as Record<string, unknown>) : {},
    body: match[2] ?? "",
  };
}

/** A skill's body first, then the base prompt given with the run. */
export function joinBasePrompt(skillBody: string, given: string | undefined): string {
  return given?.trim() ? `${skillBody}\n\n${given}` : skillBody;
}

function isRemote(source: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(source) || /^[^/\s]+@[^/\s]+:/.test(source);
}
