import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import type { SkillsSettings } from "../config-file.ts";
import { parseSkillMd, SKILL_FOLDERS } from "./skills.ts";

/** A SKILL.md found on this machine, with the spec that names it in a run. */
export interface LocalSkill {
  /** The frontmatter's name, else the skill's folder. */
  name: string;
  description: string;
  body: string;
  /** `owner/repo` for a repository's skill; absent for a skill directly in a skills directory. */
  repo?: string;
  /** The SKILL.md path relative to the repository or skills directory. */
  path: string;
  /** A skill_spec that resolves to exactly this file. */
  spec: string;
  /** Why the SKILL.md could not be read as one (it is still listed, so the author sees it). */
  error?: string;
}

/**
 * Every skill that resolves without a network fetch: `<folder>/<name>/SKILL.md` (the folders the
 * resolver searches) in each skills directory, in each `<dir>/<owner>/<repo>` under one, and in each
 * `skills.repos` entry that is a local path. Repositories behind a URL are fetched only when a run
 * needs them, so their skills are not listed.
 */
export async function listLocalSkills(settings: SkillsSettings, baseDir: string): Promise<LocalSkill[]> {
  const found: LocalSkill[] = [];
  const repos = new Map<string, string>();
  for (const [repo, source] of Object.entries(settings.repos)) {
    if (!isRemote(source)) repos.set(repo, resolve(baseDir, source));
  }
  for (const dir of settings.dirs.map((d) => resolve(baseDir, d))) {
    found.push(...(await skillsIn(dir, undefined)));
    for (const owner of await subdirs(dir)) {
      for (const name of await subdirs(join(dir, owner))) {
        const repo = `${owner}/${name}`;
        if (!repos.has(repo) && !Object.hasOwn(settings.repos, repo)) repos.set(repo, join(dir, owner, name));
      }
    }
  }
  for (const [repo, root] of repos) {
    if (existsSync(root)) found.push(...(await skillsIn(root, repo)));
  }
  return found;
}

async function skillsIn(root: string, repo: string | undefined): Promise<LocalSkill[]> {
  const out: LocalSkill[] = [];
  for (const folder of SKILL_FOLDERS) {
    for (const name of await subdirs(folder ? join(root, folder) : root)) {
      const path = folder ? `${folder}/${name}/SKILL.md` : `${name}/SKILL.md`;
      let text: string;
      try {
        text = await readFile(join(root, path), "utf8");
      } catch {
        continue;
      }
      out.push(toSkill(text, name, path, repo));
    }
  }
  return out;
}

function toSkill(text: string, folder: string, path: string, repo: string | undefined): LocalSkill {
  const { meta, body } = parseSkillMd(text);
  const error = frontmatterError(text);
  return {
    name: typeof meta.name === "string" && meta.name.trim() ? meta.name.trim() : folder,
    description: typeof meta.description === "string" ? meta.description.trim() : "",
    body: body.trim(),
    ...(repo ? { repo } : {}),
    path,
    spec: repo ? `${repo}:${path}` : folder,
    ...(error ? { error } : {}),
  };
}

/** The resolver reads a SKILL.md with broken frontmatter as all body; the catalogue says why. */
function frontmatterError(text: string): string | undefined {
  const match = text.replace(/^\uFEFF/, "").match(/^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/);
  if (!match) return undefined;
  try {
    const meta = parseYaml(match[1] ?? "");
    if (meta !== null && (typeof meta !== "object" || Array.isArray(meta))) {
      return "the frontmatter is not a YAML mapping (name:, description:)";
    }
    return undefined;
  } catch (err) {
    return `the frontmatter is not valid YAML: ${(err as Error).message.split("\n")[0]}`;
  }
}

async function subdirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory() && !e.name.startsWith("."))
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}

function isRemote(source: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(source) || /^[^/\s]+@[^/\s]+:/.test(source);
}
