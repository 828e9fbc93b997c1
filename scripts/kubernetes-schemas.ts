// Converts one Kubernetes version's JSON schemas, as the PyPI package kubernetes-validate ships them (one
// file per kind whose $refs point into a shared `/api/_definitions.json`), into what kubeconform loads
// offline: one self-contained file per kind, named `<kind>-<group>-<version>.json` like kubeconform's
// schema-location template `{{ .ResourceKind }}{{ .KindSuffix }}.json`. A shared $ref would make
// kubeconform fetch https://kubernetes.io/api/_definitions.json, so each kind gets the definitions it
// reaches copied under its own `$defs`.
//
//   node scripts/kubernetes-schemas.ts <kubernetes-validate's vX.Y.Z-local-strict dir> <target dir>
//
// Writes into a temporary directory beside the target and renames it at the end, so that the target is
// complete or absent (scripts/validate-manifests treats it as a cache).
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** `#/$defs/<name>` and `/api/_definitions.json#/$defs/<name>`: the two ways the package refers to a definition. */
const DEFINITION_REF = /^(?:\/api\/_definitions\.json)?#\/\$defs\/(.+)$/;

function main(argv: string[]): void {
  const [source, target] = argv;
  if (!source || !target)
    throw new Error("usage: node scripts/kubernetes-schemas.ts <source dir> <target dir>");
  const definitions = readJson(join(source, "_definitions.json")).$defs as JsonObject | undefined;
  if (!definitions)
    throw new Error(`${source}/_definitions.json has no $defs: not a kubernetes-validate schema dir`);

  const staging = `${target}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  let kinds = 0;
  for (const file of readdirSync(source).sort()) {
    if (!file.endsWith(".json") || file === "_definitions.json") continue;
    const schema = readJson(join(source, file));
    // Only resources (what a manifest can be); the package also ships one file per nested type.
    if (!("x-kubernetes-group-version-kind" in schema)) continue;
    writeFileSync(join(staging, file), JSON.stringify(standalone(schema, definitions)));
    kinds += 1;
  }
  if (kinds === 0) throw new Error(`no resource schemas in ${source}`);
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
  process.stdout.write(`${kinds} resource schemas written to ${target}\n`);
}

/** `schema` with every definition it reaches (transitively) under its own `$defs`, refs made local. */
function standalone(schema: JsonObject, definitions: JsonObject): JsonObject {
  const reached = new Map<string, Json>();
  const pending: string[] = [];
  const localise = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(localise);
    if (node === null || typeof node !== "object") return node;
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") {
        const name = value.match(DEFINITION_REF)?.[1];
        if (name === undefined) throw new Error(`unexpected $ref ${value}`);
        if (!(name in definitions)) throw new Error(`$ref to a missing definition: ${value}`);
        pending.push(name);
        out[key] = `#/$defs/${name}`;
      } else {
        out[key] = localise(value);
      }
    }
    return out;
  };
  const { $id: _id, ...rest } = schema;
  const root = localise(rest) as JsonObject;
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (!reached.has(name)) reached.set(name, localise(definitions[name]!));
  }
  root.$defs = Object.fromEntries([...reached].sort(([a], [b]) => a.localeCompare(b)));
  return root;
}

function readJson(path: string): JsonObject {
  return JSON.parse(readFileSync(path, "utf8")) as JsonObject;
}

main(process.argv.slice(2));
