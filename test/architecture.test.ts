import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The layering of src/, checked on the imports themselves: which parts may depend on which. A rule names
 * the files it governs and the imports they must not have; a violation names the file, the line and the
 * import as written.
 */

const ROOT = fileURLToPath(new URL("../", import.meta.url));

interface Import {
  /** The importing file, relative to the repository root with `/` separators. */
  file: string;
  line: number;
  /** As written in the source. */
  specifier: string;
  /** The imported file relative to the repository root, or undefined for a package or `node:` module. */
  target: string | undefined;
}

interface Rule {
  name: string;
  governs(file: string): boolean;
  /** Whether `file` may not import `target`. */
  forbids(target: string, file: string): boolean;
}

const inside = (dir: string) => (path: string) => path.startsWith(`${dir}/`);
/**
 * The surface folder a file is in: src/integrations/<surface>/, a folder with a surface.ts (others there,
 * such as attachments/, are what surfaces share). Undefined for any other file.
 */
const surfaceOf = (path: string) => {
  const folder = /^src\/integrations\/([^/]+)\//.exec(path)?.[1];
  return folder && existsSync(join(ROOT, "src/integrations", folder, "surface.ts")) ? folder : undefined;
};
const isSrc = inside("src");
/** The run pipeline's layers, top first. */
const PIPELINE = ["src/executor", "src/delivery", "src/workspace", "src/harnesses", "src/sandbox"];
const pipelineLayer = (path: string) => {
  const i = PIPELINE.findIndex((layer) => inside(layer)(path));
  return i < 0 ? undefined : i;
};

const RULES: Rule[] = [
  {
    name: "src/model imports nothing of src outside src/model",
    governs: inside("src/model"),
    forbids: (target) => isSrc(target) && !inside("src/model")(target),
  },
  {
    name: "src/store does not import src/runs",
    governs: inside("src/store"),
    forbids: inside("src/runs"),
  },
  {
    // The backends are siblings: what both use (row mapping, transition columns) lives beside store.ts.
    name: "src/store/postgres imports nothing of src/store/sqlite",
    governs: inside("src/store/postgres"),
    forbids: inside("src/store/sqlite"),
  },
  {
    name: "src/store/sqlite imports nothing of src/store/postgres",
    governs: inside("src/store/sqlite"),
    forbids: inside("src/store/postgres"),
  },
  {
    // A surface is a folder: what surfaces share lives at src/integrations/ root (grammar, the inbox queue).
    name: "a surface imports nothing of another surface",
    governs: (file) => surfaceOf(file) !== undefined,
    forbids: (target, file) => surfaceOf(target) !== undefined && surfaceOf(target) !== surfaceOf(file),
  },
  {
    name: "src/notifier does not import src/integrations",
    governs: inside("src/notifier"),
    forbids: inside("src/integrations"),
  },
  {
    // The client is a package of its own (clients/typescript), published without the server.
    name: "clients/typescript/src imports nothing outside itself",
    governs: inside("clients/typescript/src"),
    forbids: (target) => !inside("clients/typescript/src")(target),
  },
  {
    name: "src/api/routes and src/web do not import src/api/server.ts",
    governs: (file) => inside("src/api/routes")(file) || inside("src/web")(file),
    forbids: (target) => target === "src/api/server.ts",
  },
  {
    name: "src/config.ts does not import the run pipeline",
    governs: (file) => file === "src/config.ts",
    forbids: (target) => PIPELINE.some((layer) => inside(layer)(target)),
  },
  {
    // The executor's pipeline reads top to bottom: each layer uses only the layers below it.
    name: "the run pipeline imports only downwards: executor → delivery → workspace → harnesses → sandbox",
    governs: (file) => pipelineLayer(file) !== undefined,
    forbids: (target, file) => {
      const to = pipelineLayer(target);
      return to !== undefined && to < pipelineLayer(file)!;
    },
  },
];

/** Every import of `rule`'s files that the rule forbids, as `file:line imports "specifier" (target)`. */
function violations(rule: Rule, imports: Import[]): string[] {
  return imports
    .filter((i) => rule.governs(i.file) && i.target !== undefined && rule.forbids(i.target, i.file))
    .map((i) => `${i.file}:${i.line} imports "${i.specifier}" (${i.target})`);
}

/**
 * The module specifiers of `source`: `import … from`, side-effect `import "…"`, `export … from`,
 * `import("…")` with a literal, and `import("…")` types. Type-only imports count too: they are
 * dependencies of the design even when erased at run time.
 */
function importsOf(file: string, source: string): Import[] {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Import[] = [];
  const add = (node: ts.Node, literal: ts.Expression | undefined) => {
    if (!literal || !ts.isStringLiteralLike(literal)) return;
    const line = sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line + 1;
    found.push({ file, line, specifier: literal.text, target: resolveSpecifier(file, literal.text) });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return found;
}

/** A relative specifier as a repository path, preferring the .ts file that Node would load. */
function resolveSpecifier(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) return undefined;
  const base = resolve(ROOT, dirname(file), specifier);
  const candidates = [base, base.replace(/\.js$/, ".ts"), `${base}.ts`, join(base, "index.ts")];
  const existing = candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? base;
  return relative(ROOT, existing).split(sep).join("/");
}

function tsFilesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .map((entry) => `${dir}/${entry.split(sep).join("/")}`)
    .filter((path) => path.endsWith(".ts") && statSync(join(ROOT, path)).isFile())
    .sort();
}

const SRC_IMPORTS = [...tsFilesUnder("src"), ...tsFilesUnder("clients/typescript/src")].flatMap((file) =>
  importsOf(file, readFileSync(join(ROOT, file), "utf8")),
);

describe("architecture: what src/ may import", () => {
  it.each(RULES.map((rule) => [rule.name, rule] as const))("%s", (_name, rule) => {
    expect(violations(rule, SRC_IMPORTS)).toEqual([]);
  });

  it("sees every kind of import, so an empty list of violations means something", () => {
    const imports = importsOf(
      "src/model/example.ts",
      [
        'import { a } from "../runs/run-service.ts";',
        'import type { B } from "../store/store.ts";',
        'import "../log.ts";',
        'export { c } from "../executor/executor.ts";',
        'export * from "./run.ts";',
        'const lazy = () => import("../api/server.ts");',
        'type Server = typeof import("../app.ts");',
        'import { z } from "zod";',
        'import { join } from "node:path";',
      ].join("\n"),
    );
    expect(imports.map((i) => [i.line, i.target])).toEqual([
      [1, "src/runs/run-service.ts"],
      [2, "src/store/store.ts"],
      [3, "src/log.ts"],
      [4, "src/executor/executor.ts"],
      [5, "src/model/run.ts"],
      [6, "src/api/server.ts"],
      [7, "src/app.ts"],
      [8, undefined],
      [9, undefined],
    ]);
    // And the real tree yields imports: a parser that found nothing would pass every rule.
    expect(SRC_IMPORTS.some((i) => i.file === "src/app.ts" && i.target === "src/config.ts")).toBe(true);
    expect(SRC_IMPORTS.some((i) => i.file === "src/main.ts" && i.specifier === "./cli/serve.ts")).toBe(true);
  });

  it("fails naming the file and the import when a rule is broken", () => {
    const bad: Import[] = [
      {
        file: "src/model/run.ts",
        line: 3,
        specifier: "../runs/run-service.ts",
        target: "src/runs/run-service.ts",
      },
      { file: "src/model/run.ts", line: 4, specifier: "./run-state.ts", target: "src/model/run-state.ts" },
      { file: "src/model/run.ts", line: 5, specifier: "zod", target: undefined },
      {
        file: "src/store/postgres/runs.ts",
        line: 7,
        specifier: "../sqlite/rows.ts",
        target: "src/store/sqlite/rows.ts",
      },
      { file: "src/store/postgres/runs.ts", line: 8, specifier: "../rows.ts", target: "src/store/rows.ts" },
      {
        file: "src/web/session-page.ts",
        line: 9,
        specifier: "../api/server.ts",
        target: "src/api/server.ts",
      },
      {
        file: "src/config.ts",
        line: 2,
        specifier: "./sandbox/sandbox.ts",
        target: "src/sandbox/sandbox.ts",
      },
      {
        file: "src/app.ts",
        line: 7,
        specifier: "./executor/executor.ts",
        target: "src/executor/executor.ts",
      },
      {
        file: "src/sandbox/bwrap-sandbox.ts",
        line: 3,
        specifier: "../workspace/disk-quota.ts",
        target: "src/workspace/disk-quota.ts",
      },
      {
        file: "src/workspace/environments.ts",
        line: 4,
        specifier: "../sandbox/sandbox.ts",
        target: "src/sandbox/sandbox.ts",
      },
      {
        file: "src/integrations/slack/verbs.ts",
        line: 8,
        specifier: "../github/messages.ts",
        target: "src/integrations/github/messages.ts",
      },
      {
        file: "src/integrations/slack/verbs.ts",
        line: 9,
        specifier: "./access.ts",
        target: "src/integrations/slack/access.ts",
      },
      {
        file: "src/integrations/slack/verbs.ts",
        line: 10,
        specifier: "../grammar.ts",
        target: "src/integrations/grammar.ts",
      },
    ];
    const byRule = Object.fromEntries(RULES.map((rule) => [rule.name, violations(rule, bad)]));
    expect(byRule).toEqual({
      "src/model imports nothing of src outside src/model": [
        'src/model/run.ts:3 imports "../runs/run-service.ts" (src/runs/run-service.ts)',
      ],
      "src/store does not import src/runs": [],
      "src/store/postgres imports nothing of src/store/sqlite": [
        'src/store/postgres/runs.ts:7 imports "../sqlite/rows.ts" (src/store/sqlite/rows.ts)',
      ],
      "src/store/sqlite imports nothing of src/store/postgres": [],
      "a surface imports nothing of another surface": [
        'src/integrations/slack/verbs.ts:8 imports "../github/messages.ts" (src/integrations/github/messages.ts)',
      ],
      "src/notifier does not import src/integrations": [],
      "clients/typescript/src imports nothing outside itself": [],
      "src/api/routes and src/web do not import src/api/server.ts": [
        'src/web/session-page.ts:9 imports "../api/server.ts" (src/api/server.ts)',
      ],
      "src/config.ts does not import the run pipeline": [
        'src/config.ts:2 imports "./sandbox/sandbox.ts" (src/sandbox/sandbox.ts)',
      ],
      "the run pipeline imports only downwards: executor → delivery → workspace → harnesses → sandbox": [
        'src/sandbox/bwrap-sandbox.ts:3 imports "../workspace/disk-quota.ts" (src/workspace/disk-quota.ts)',
      ],
    });
  });

  it("the notifier names no surface: it reports through whichever platforms the surfaces register", () => {
    const named = readdirSync(join(ROOT, "src/notifier"))
      .filter((f) => f.endsWith(".ts"))
      .flatMap((f) =>
        readFileSync(join(ROOT, "src/notifier", f), "utf8")
          .split("\n")
          .flatMap((line, i) =>
            /slack|github/i.test(line) ? [`src/notifier/${f}:${i + 1}: ${line.trim()}`] : [],
          ),
      );
    expect(named).toEqual([]);
  });

  it("keeps every file of src/ under 600 lines: one responsibility per file", () => {
    const MAX_LINES = 600;
    const long = tsFilesUnder("src").flatMap((file) => {
      const lines = readFileSync(join(ROOT, file), "utf8").split("\n").length;
      return lines > MAX_LINES ? [`${file}: ${lines} lines`] : [];
    });
    expect(long).toEqual([]);
  });
});
