import { parseRepositorySpec, type RepositoryParsing, type RepositorySpec } from "../model/repository.ts";

/** `in owner/repo` or `in owner/repo@base` as a word of its own, outside code. */
const IN_REPOSITORY =
  /(?:^|\s)in\s+([A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9._-]+(?:@[A-Za-z0-9._/+#=,-]+)?)(?=[\s.,;:!?)]|$)/;
/** A GitHub pull request or issue linked on the tracker's issue names its repository. */
const GITHUB_LINK =
  /^https:\/\/github\.com\/([A-Za-z0-9][A-Za-z0-9-]*\/[A-Za-z0-9._-]+)\/(?:pull|issues)\/\d+/;

export type RepositoryChoice =
  | { kind: "chosen"; spec: RepositorySpec; from: string }
  | { kind: "none"; reason: string };

/**
 * Where a run started from a tracker's issue works (Linear, Jira: docs/surfaces.md), in order: `in
 * owner/repo[@base]` written in the request (the comment that mentioned Dispatch, else the issue's
 * description), a GitHub pull request or issue linked on the issue, the default `fallback.setting` names
 * (its value in `fallback.repository`). None of them: the answer says how to name one. A spec the operator
 * does not allow (another host, a file:// remote) is refused with its reason, as the API would.
 */
export function chooseRepository(input: {
  texts: Array<string | null | undefined>;
  links: readonly string[];
  /** The tracker's default for this issue's team or project, and the setting that holds it. */
  fallback: { repository: string | undefined; setting: string };
  parsing: RepositoryParsing;
}): RepositoryChoice {
  for (const text of input.texts) {
    const match = text ? IN_REPOSITORY.exec(withoutCode(text)) : null;
    // A sentence's full stop or comma after it is not part of the name.
    if (match) return parsed(match[1]!.replace(/[.,;:!?]+$/, ""), "the request", input.parsing);
  }
  for (const link of input.links) {
    const match = GITHUB_LINK.exec(link);
    if (match) return parsed(match[1]!, "a GitHub link on the issue", input.parsing);
  }
  const { repository, setting } = input.fallback;
  if (repository) return parsed(repository, setting, input.parsing);
  return {
    kind: "none",
    reason: [
      "I don't know which repository to work in.",
      "Write `in owner/repo` (or `in owner/repo@branch`) in the issue or in a comment that mentions me,",
      "link a GitHub pull request or issue of the repository on this issue,",
      `or ask your Dispatch admin to set \`${setting}\` in dispatch.config.yaml.`,
    ].join(" "),
  };
}

function parsed(spec: string, from: string, parsing: RepositoryParsing): RepositoryChoice {
  const result = parseRepositorySpec(spec, parsing);
  if (typeof result === "string")
    return { kind: "none", reason: `The repository from ${from} (\`${spec}\`) ${result}.` };
  return { kind: "chosen", spec: result, from };
}

/** The text without code fences and inline code: a repository written as code is an example, not a request. */
function withoutCode(text: string): string {
  return text.replace(/```[\s\S]*?(?:```|$)|`[^`\n]+`/g, " ");
}
