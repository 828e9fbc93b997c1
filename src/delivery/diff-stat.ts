/** `git diff --shortstat` ("4 files changed, 12 insertions(+), 3 deletions(-)") as "+12 −3 in 4 files". */
export function diffStat(shortstat: string): string {
  const num = (re: RegExp) => Number(re.exec(shortstat)?.[1] ?? 0);
  const files = num(/(\d+) files? changed/);
  return `+${num(/(\d+) insertions?\(\+\)/)} \u2212${num(/(\d+) deletions?\(-\)/)} in ${files} file${files === 1 ? "" : "s"}`;
}
