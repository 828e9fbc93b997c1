/** `git diff --shortstat` ("4 files changed, 12 insertions(+), 3 deletions(-)") as "+12 −3 in 4 files". */
export function diffStat(shortstat: string): {
  text: string;
  files: number;
  insertions: number;
  deletions: number;
} {
  const num = (re: RegExp) => Number(re.exec(shortstat)?.[1] ?? 0);
  const files = num(/(\d+) files? changed/);
  const insertions = num(/(\d+) insertions?\(\+\)/);
  const deletions = num(/(\d+) deletions?\(-\)/);
  return {
    text: `+${insertions} \u2212${deletions} in ${files} file${files === 1 ? "" : "s"}`,
    files,
    insertions,
    deletions,
  };
}
