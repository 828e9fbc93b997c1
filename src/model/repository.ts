/**
 * Where a run's work is delivered (docs/delivery.md): a repository, its base branch and the branch Dispatch
 * pushes to, parsed from what people write (`owner/repo`, `owner/repo@base`, a git URL).
 */

export type DeliveryMode = "pull_request" | "branch" | "none";
export const DELIVERY_MODES: readonly DeliveryMode[] = ["pull_request", "branch", "none"];

export interface RepositorySpec {
  /** `owner/repo` for a repository on the GitHub server, else the git URL (without credentials). */
  repository: string;
  /** The base branch when the spec named one (`owner/repo@base`). */
  base?: string;
}

const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,38})$/;
const NAME = /^[A-Za-z0-9._-]{1,100}$/;

/** Whether `repository` is `owner/repo` (a repository on the GitHub server) rather than a URL. */
export function isGitHubRepository(repository: string): boolean {
  const [owner, name, extra] = repository.split("/");
  return (
    extra === undefined && !!owner && !!name && OWNER.test(owner) && NAME.test(name) && !/^\.+$/.test(name)
  );
}

/**
 * A git branch name Dispatch accepts for a base or work branch: git's ref rules (no `..`, `@{`, control
 * characters, spaces or `~^:?*[\`; no leading `-` or `/`, no trailing `/`, `.` or `.lock`), at most 200.
 */
export function branchNameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > 200) return "must be 1 to 200 characters";
  if (!/^[A-Za-z0-9._/+#=,-]+$/.test(name)) return "may contain only letters, digits and . _ / + # = , -";
  if (name.startsWith("-") || name.startsWith("/") || name.endsWith("/") || name.endsWith("."))
    return "may not start with - or / or end with / or .";
  if (name.includes("..") || name.includes("//") || name.endsWith(".lock") || name.includes("/."))
    return "is not a valid git branch name";
  return undefined;
}

/** How repository specs are read: the GitHub server, and which other remotes the operator allows. */
export interface RepositoryParsing {
  /** GITHUB_SERVER_URL: `owner/repo` lives at `${serverUrl}/owner/repo.git`. */
  serverUrl: string;
  /** DISPATCH_ALLOW_FILE_REMOTES: `file://` repositories (tests, air-gapped mirrors). */
  allowFileRemotes: boolean;
  /** `git.allowed_hosts`: the hosts a run may name by https:// URL, `host` (port 443) or `host:port`. */
  allowedHosts: readonly string[];
}

/**
 * Parses `owner/repo`, `owner/repo@base` or a git URL. A URL under the GitHub server
 * (`${serverUrl}/owner/repo[.git]`) becomes `owner/repo`; any other must be https:// on a host the
 * operator allows (Dispatch's own process fetches and pushes it), or `file://` when file remotes are
 * allowed. Returns the problem as text when the spec is not one of those.
 */
export function parseRepositorySpec(spec: string, opts: RepositoryParsing): RepositorySpec | string {
  const text = spec.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return parseUrl(text, opts);
  if (/^[^/@:\s]+@[^/]+:/.test(text))
    return "SSH remotes are not supported: give owner/repo or an https:// URL (Dispatch supplies the credentials)";
  const at = text.indexOf("@");
  const repository = at >= 0 ? text.slice(0, at) : text;
  const base = at >= 0 ? text.slice(at + 1) : undefined;
  if (!isGitHubRepository(repository))
    return `"${spec}" is not a repository: write owner/repo, owner/repo@base-branch or a git URL`;
  if (base !== undefined) {
    const problem = branchNameProblem(base);
    if (problem) return `the base branch "${base}" ${problem}`;
  }
  return { repository: repository.replace(/\.git$/, ""), ...(base !== undefined ? { base } : {}) };
}

function parseUrl(text: string, opts: RepositoryParsing): RepositorySpec | string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `"${text}" is not a valid URL`;
  }
  if (url.username || url.password)
    return "the repository URL must not carry credentials: Dispatch supplies them (GITHUB_TOKEN or the GitHub App)";
  if (url.search || url.hash) return "the repository URL must not have a query or fragment";
  if (url.protocol === "file:" && !opts.allowFileRemotes)
    return "file:// repositories are allowed only when the server sets DISPATCH_ALLOW_FILE_REMOTES=true";
  const server = opts.serverUrl.replace(/\/+$/, "");
  const href = url.href.replace(/\/+$/, "");
  if (href.toLowerCase().startsWith(`${server.toLowerCase()}/`)) {
    const rest = href.slice(server.length + 1).replace(/\.git$/, "");
    if (isGitHubRepository(rest)) return { repository: rest };
  }
  if (url.protocol === "file:") return { repository: href };
  if (url.protocol !== "https:")
    return `${url.protocol}// repositories are not supported: write owner/repo for a repository on ${server}, or an https:// URL`;
  if (!gitHostAllowed(url, opts.allowedHosts)) {
    const allowed = opts.allowedHosts.length ? `allowed: ${opts.allowedHosts.join(", ")}` : "none is allowed";
    return `${url.host} is not a git host runs may name on this server (${allowed}): write owner/repo for a repository on ${server}, or ask the operator to allow the host with git.allowed_hosts in dispatch.config.yaml`;
  }
  return { repository: href };
}

/**
 * Whether an https URL is on a git host the operator allows (`git.allowed_hosts`): an entry `host` allows
 * that host on port 443, `host:port` on that port. Names match without regard to case, never by suffix.
 */
export function gitHostAllowed(url: URL, allowedHosts: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || "443";
  return allowedHosts.some((entry) => {
    const [name, entryPort] = entry.toLowerCase().split(":");
    return name === host && (entryPort ?? "443") === port;
  });
}

/** Where git clones and pushes a run's repository: `${GITHUB_SERVER_URL}/owner/repo.git`, or the URL itself. */
export function remoteUrl(repository: string, serverUrl: string): string {
  return isGitHubRepository(repository) ? `${serverUrl.replace(/\/+$/, "")}/${repository}.git` : repository;
}

/**
 * The issue or pull request of `repository` (`owner/repo`) a GitHub-triggered run came from, read from its
 * trigger URL (the comment's); undefined for any other run.
 */
export function triggerOf(
  triggerUrl: string | null | undefined,
  repository: string,
): { kind: "issues" | "pull"; number: number } | undefined {
  if (!triggerUrl) return undefined;
  const m = /^https?:\/\/[^/]+\/([^/]+\/[^/]+)\/(issues|pull)\/(\d+)/.exec(triggerUrl);
  if (!m || m[1]!.toLowerCase() !== repository.toLowerCase()) return undefined;
  return { kind: m[2] as "issues" | "pull", number: Number(m[3]) };
}

/**
 * The branch a run's work goes to: `dispatch/<last 8 of the run id>-<slug of the title, ≤ 40>`. The
 * last characters, not the first: a UUIDv7 starts with its timestamp, so runs made within a minute of each
 * other share their first 8, and two with the same title would get one branch (the second then refused as
 * another run's). Its last 8 are random.
 */
export function workBranchName(runId: string, title: string): string {
  const slug = title
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  const short = runId.replace(/-/g, "").slice(-8);
  return `dispatch/${short}${slug ? `-${slug}` : ""}`;
}
