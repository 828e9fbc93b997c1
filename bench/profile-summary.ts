/**
 * Summarises a V8 CPU profile (the .cpuprofile files `node --cpu-prof` writes, e.g. with
 * BENCH_CPU_PROF=<dir> npm run bench:api) as two text tables, to read in a terminal or paste into a note:
 *
 *   node bench/profile-summary.ts <file.cpuprofile> [--top 25] [--filter <substring of url or name>]
 *
 * - self time by function: where the CPU actually was (leaf frames), with the source location;
 * - self time by package or area: node_modules/<package>, src/<dir>, node: internals, (garbage collector),
 *   (program) = native work outside JavaScript (syscalls, libuv), (native) = a V8/Node builtin such as
 *   writeUtf8String (the socket write) or the SQLite call a store function makes, which V8 books under
 *   the JavaScript function that called it;
 * - total time of Dispatch's own functions (src/): self time plus everything they called, so a route
 *   handler shows what its request costs end to end.
 *
 * Percentages are of the busy samples: everything but (idle), which is the time the process waited (the
 * profile covers the whole process, so also its start and the scenarios it did not serve). The profile
 * itself is a measurement of one run on one machine: summarise it, never commit it.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
  parent?: ProfileNode;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const ROOT = fileURLToPath(new URL("../", import.meta.url));

function main(argv: string[]): void {
  const file = argv.find((a, i) => !a.startsWith("--") && !argv[i - 1]?.startsWith("--"));
  if (!file) {
    console.error("usage: node bench/profile-summary.ts <file.cpuprofile> [--top N] [--filter text]");
    process.exit(2);
  }
  const top = Number(option(argv, "--top") ?? 25);
  const filter = option(argv, "--filter");
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;

  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) byId.get(child)!.parent = node;
  }
  // Self time of a node = the time deltas of the samples that landed on it.
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  let busyUs = 0;
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  const ownTotal = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === "(idle)") continue;
    busyUs += us;
    // Each of Dispatch's functions on this stack, once even when it recurses.
    const onStack = new Set<string>();
    for (let n: ProfileNode | undefined = node; n; n = n.parent) {
      if (shortUrl(n.callFrame.url).startsWith("src/")) onStack.add(describe(n.callFrame));
    }
    for (const fn of onStack) add(ownTotal, fn, us);
    const fn = describe(node.callFrame);
    if (filter && !fn.includes(filter)) continue;
    add(byFunction, fn, us);
    add(byArea, areaOf(node.callFrame), us);
  }

  const seconds = (profile.endTime - profile.startTime) / 1e6;
  console.log(
    `${file}: ${seconds.toFixed(1)} s, ${profile.samples.length.toLocaleString("en")} samples, busy ${(busyUs / 1e6).toFixed(1)} s (percentages below are of busy time)`,
  );
  table(
    `self time by function (top ${top}${filter ? `, matching "${filter}"` : ""})`,
    byFunction,
    busyUs,
    top,
  );
  table("self time by area", byArea, busyUs, top);
  table(`total time of Dispatch's functions (src/, top ${top})`, ownTotal, busyUs, top);
}

function add(map: Map<string, number>, key: string, us: number): void {
  map.set(key, (map.get(key) ?? 0) + us);
}

function table(title: string, values: Map<string, number>, totalUs: number, top: number): void {
  console.log(`\n${title}`);
  const rows = [...values].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, us] of rows) {
    console.log(`${pct(us, totalUs).padStart(7)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`);
  }
}

function describe(frame: CallFrame): string {
  const name = frame.functionName || "(anonymous)";
  if (!frame.url) return name;
  return `${name}  ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
}

function areaOf(frame: CallFrame): string {
  const url = frame.url;
  if (!url) return frame.functionName.startsWith("(") ? frame.functionName : "(native)";
  if (url.startsWith("node:")) return url.split("/")[0]!.replace(/^node:internal$/, "node:internal");
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  const path = shortUrl(url);
  const parts = path.split("/");
  return parts.length > 2 ? parts.slice(0, 2).join("/") : path;
}

function shortUrl(url: string): string {
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  if (path.startsWith(ROOT)) {
    const rel = relative(ROOT, path);
    return rel.replace(/^.*node_modules\//, "");
  }
  return path;
}

function pct(part: number, whole: number): string {
  return whole > 0 ? `${((part / whole) * 100).toFixed(1)} %` : "?";
}

function option(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

main(process.argv.slice(2));
