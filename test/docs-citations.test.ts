import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * Citations a newcomer can follow: a comment or a document that names a Markdown file names one the
 * repository holds (docs/architecture.md, README.md, …), so that "see X" always leads somewhere. A
 * capability is named by what it is or by its page in docs/, never by the number of the issue that
 * brought it. Comments of TypeScript files are read as the compiler finds them (a path in a string is
 * data, not a citation); other text files are read whole.
 */

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** Where citations live: the code, its tests and benchmarks, the clients, the scripts and the docs. */
const SCANNED = /^(src|test|bench|clients|scripts|docs)\/|^[^/]+\.md$/;
const TEXT = /\.(ts|mts|js|mjs|sql|py|toml|sh|ya?ml|md)$/;
const CODE = /\.(ts|mts|js|mjs)$/;

/** A file format rather than a document: a skill is a SKILL.md wherever it lives. */
const FORMATS = new Set(["SKILL.md"]);

const MD_PATH = /[\w./-]*\.md\b/g;
const ISSUE_NUMBER = /\bissue \d+\b/g;

interface Citation {
  /** The citing file, relative to the root. */
  file: string;
  line: number;
  text: string;
}

function trackedFiles(): string[] {
  return execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter((file) => SCANNED.test(file) && TEXT.test(file) && existsSync(join(ROOT, file)));
}

/** Every comment of a TypeScript or JavaScript file, with the offset it starts at. */
function comments(text: string, file: string): Array<{ pos: number; text: string }> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found = new Map<number, string>();
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) found.set(r.pos, text.slice(r.pos, r.end));
  };
  const visit = (node: ts.Node) => {
    // Every comment is trivia next to some token, and getChildren reaches every token.
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return [...found].map(([pos, body]) => ({ pos, text: body }));
}

/** The parts of a file where citations are read: its comments (code) or all of it. */
function citingText(file: string): Array<{ pos: number; text: string }> {
  const text = readFileSync(join(ROOT, file), "utf8");
  return CODE.test(file) ? comments(text, file) : [{ pos: 0, text }];
}

function lineAt(file: string, pos: number): number {
  return readFileSync(join(ROOT, file), "utf8").slice(0, pos).split("\n").length;
}

function find(pattern: RegExp): Citation[] {
  const found: Citation[] = [];
  for (const file of trackedFiles()) {
    for (const part of citingText(file)) {
      for (const m of part.text.matchAll(pattern)) {
        found.push({ file, line: lineAt(file, part.pos + m.index), text: m[0] });
      }
    }
  }
  return found;
}

/** Whether `cited` names a file of the repository, from the citing file's folder or one above it. */
function followable(citingFile: string, cited: string): boolean {
  if (cited.startsWith("//")) return true; // the tail of a URL: not a file of this repository
  const name = cited.replace(/^\.\//, "");
  if (FORMATS.has(name.split("/").at(-1)!)) return true;
  if (name.startsWith("/")) return false;
  for (let dir = dirname(join(ROOT, citingFile)); ; dir = dirname(dir)) {
    const path = relative(ROOT, resolve(dir, name));
    const inside = path !== "" && !path.startsWith("..") && !isAbsolute(path);
    if (inside && existsSync(join(ROOT, path))) return true;
    if (resolve(dir) === resolve(ROOT)) return false;
  }
}

const where = (c: Citation) => `${c.file}:${c.line}: ${c.text}`;

describe("citations", () => {
  it("name only *.md files the repository holds", () => {
    const cited = find(MD_PATH);
    expect(cited.length).toBeGreaterThan(0);
    expect(cited.filter((c) => !followable(c.file, c.text)).map(where)).toEqual([]);
  });

  it("name a capability by what it is or its page in docs/, not by an issue number", () => {
    expect(find(ISSUE_NUMBER).map(where)).toEqual([]);
  });

  it("are read where they are: a cited file that is missing is caught", () => {
    expect(followable("src/app.ts", "docs/architecture.md")).toBe(true);
    expect(followable("docs/api.md", "../SECURITY.md")).toBe(true);
    expect(followable("src/app.ts", "API.md")).toBe(false);
    expect(followable("bench/README.md", "/work/shared/docs/QUALITY.md")).toBe(false);
    expect(followable("README.md", "../shared/docs/QUALITY.md")).toBe(false);
  });
});
