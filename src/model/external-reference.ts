import type { Artifact } from "./run.ts";

/**
 * What a URL outside Dispatch names, as the Warp Platform API's EXTERNAL_REFERENCE artifacts and its
 * `run-by-external-reference` lookup read it (docs/api.md): a GitHub issue or pull request (or a comment on
 * one), a Linear issue, or a Slack message. Each has one canonical URL, the key a lookup matches on.
 */
export type ExternalReference =
  | {
      kind: "github_issue" | "github_pull_request";
      /** `https://github.com/owner/repo/issues/12`, without the comment anchor or query. */
      url: string;
      repository: string;
      number: number;
      /** The comment the URL points at, when it does. */
      commentId?: string;
    }
  | { kind: "linear_issue"; url: string; identifier: string }
  | {
      kind: "slack_message";
      /** `https://team.slack.com/archives/C123/p1700000000123456`, without the query. */
      url: string;
      channel: string;
      /** The message's ts, `1700000000.123456`. */
      ts: string;
      /** The thread's ts when the permalink is of a reply. */
      threadTs?: string;
    };

const GITHUB_PATH = /^\/([\w.-]+)\/([\w.-]+)\/(issues|pull)\/(\d{1,12})(?:\/[\w/-]*)?$/;
const LINEAR_PATH = /^\/([\w-]+)\/issue\/([A-Za-z][A-Za-z0-9]*-\d{1,12})(?:\/[^/]*)?$/;
const SLACK_PATH = /^\/archives\/([A-Z0-9]{2,30})\/p(\d{10})(\d{6})$/;
const SLACK_TS = /^\d{10}\.\d{6}$/;

/** The reference `raw` names, or undefined when it is not a URL of one of those kinds. */
export function parseExternalReference(raw: string): ExternalReference | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined;
  const origin = `${url.protocol}//${url.host}`;
  const path = url.pathname.replace(/\/+$/, "");
  if (url.hostname === "linear.app") {
    const m = LINEAR_PATH.exec(path);
    if (!m) return undefined;
    const identifier = m[2]!.toUpperCase();
    return { kind: "linear_issue", url: `${origin}/${m[1]}/issue/${identifier}`, identifier };
  }
  if (url.hostname.endsWith(".slack.com")) {
    const m = SLACK_PATH.exec(path);
    if (!m) return undefined;
    const threadTs = url.searchParams.get("thread_ts") ?? undefined;
    return {
      kind: "slack_message",
      url: `${origin}${path}`,
      channel: m[1]!,
      ts: `${m[2]}.${m[3]}`,
      ...(threadTs && SLACK_TS.test(threadTs) ? { threadTs } : {}),
    };
  }
  // GitHub or GitHub Enterprise: any host whose path has the shape of an issue or pull request.
  const m = GITHUB_PATH.exec(path);
  if (!m) return undefined;
  const [, owner, repo, kind, number] = m;
  const comment = /^issuecomment-(\d+)$/.exec(url.hash.slice(1));
  return {
    kind: kind === "pull" ? "github_pull_request" : "github_issue",
    url: `${origin}/${owner}/${repo}/${kind}/${number}`,
    repository: `${owner}/${repo}`,
    number: Number(number),
    ...(comment ? { commentId: comment[1]! } : {}),
  };
}

/**
 * The issue a run came from as an EXTERNAL_REFERENCE artifact, recorded when the run is created: the
 * GitHub issue or pull request (or Linear issue) its trigger URL points into. Undefined for a run started
 * anywhere else.
 */
export function issueArtifactOf(triggerUrl: string | null | undefined, at: string): Artifact | undefined {
  const ref = triggerUrl ? parseExternalReference(triggerUrl) : undefined;
  if (!ref || ref.kind === "slack_message") return undefined;
  const title = ref.kind === "linear_issue" ? ref.identifier : `${ref.repository}#${ref.number}`;
  return {
    artifact_type: "EXTERNAL_REFERENCE",
    created_at: at,
    data: { reference_type: ref.kind, url: ref.url, title },
  };
}
