/**
 * The repository the runtime benches work in: `files` files (10,000 by default) in directories of 100, a
 * few hundred bytes each, like a mid-sized source tree. checkpoint.ts and run-start.ts use the same one,
 * so their figures read together.
 */

/** The file at index `i`: `src/d000/f00000.ts` … (100 files a directory). */
export function bigRepoPath(i: number): string {
  return `src/d${String(Math.floor(i / 100)).padStart(3, "0")}/f${String(i).padStart(5, "0")}.ts`;
}

export function bigRepoContent(i: number): string {
  return `// generated file ${i}\nexport const value = 0;\n${`export const line${i} = "${"x".repeat(60)}";\n`.repeat(4)}`;
}

/** Every file of the repository, path → content (GitRemotes.create's shape). */
export function bigRepoFiles(files: number): Record<string, string> {
  const tree: Record<string, string> = {};
  for (let i = 0; i < files; i++) tree[bigRepoPath(i)] = bigRepoContent(i);
  return tree;
}
