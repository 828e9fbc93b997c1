import type { Logger } from "pino";
import { MAX_ATTACHMENT_BYTES } from "../../model/attachment.ts";
import { boundedDownload, type DownloadPolicy } from "../attachments/bounded-download.ts";
import { type CollectedImages, collectImages, type ImageCandidate } from "../attachments/collect-images.ts";
import type { GitHubClients } from "./github-clients.ts";

/** A download of one image may take this long. */
const DOWNLOAD_TIMEOUT_MS = 30_000;
/** Images looked at per comment (the rest are not even listed): a comment is not a crawl list. */
const MAX_CANDIDATES = 20;
/** GitHub's storage hosts, where github.com's attachment links redirect (signed links: no token). */
const STORAGE_HOSTS = new Set([
  "user-images.githubusercontent.com",
  "private-user-images.githubusercontent.com",
]);
/** Paths of uploaded attachments on a GitHub web host: new-style and per-repository (older) links. */
const ATTACHMENT_PATH = /^\/(?:user-attachments\/assets\/|[^/]+\/[^/]+\/assets\/)[^/]/;

/**
 * The images of a GitHub comment (and, for a new run, of the issue's body) as the run's attachments:
 * Markdown `![alt](url)` and HTML `<img src="…">`, outside code. Only GitHub's own attachment links are
 * fetched — `/user-attachments/assets/…` (and `/<owner>/<repo>/assets/…`) on github.com or the configured
 * server (GITHUB_SERVER_URL) and API host (GITHUB_API_URL), and GitHub's storage hosts those redirect to —
 * so a comment can never make Dispatch request an arbitrary URL (SSRF). The installation token goes only
 * to the configured hosts; downloads are bounded in size and time.
 */
export class CommentImages {
  private readonly clients: Pick<GitHubClients, "forRepo">;
  /** Origins whose attachment paths are GitHub's, and that take the installation token. */
  private readonly configured: Set<string>;
  private readonly log: Logger;
  private readonly timeoutMs: number;

  constructor(opts: {
    clients: Pick<GitHubClients, "forRepo">;
    apiUrl: string;
    serverUrl?: string;
    log: Logger;
    timeoutMs?: number;
  }) {
    this.clients = opts.clients;
    this.log = opts.log;
    this.timeoutMs = opts.timeoutMs ?? DOWNLOAD_TIMEOUT_MS;
    this.configured = new Set(
      [opts.apiUrl, opts.serverUrl]
        .map((u) => parseUrl(u ?? ""))
        .filter((u): u is URL => u !== undefined && (u.protocol === "https:" || u.protocol === "http:"))
        .map((u) => u.origin),
    );
  }

  /** Attachments from the images of `markdowns` (in order, each image once), and notes on those left out. */
  async collect(repo: string, markdowns: ReadonlyArray<string | null | undefined>): Promise<CollectedImages> {
    const seen = new Set<string>();
    const images = markdowns
      .flatMap((m) => imagesIn(m ?? ""))
      .filter((i) => !seen.has(i.url) && seen.add(i.url))
      .slice(0, MAX_CANDIDATES);
    if (images.length === 0) return { attachments: [], notes: [] };
    let token: string | undefined;
    const policy: DownloadPolicy = {
      allowed: (url) => this.isGitHubImage(url),
      tokenFor: (url) => (token && this.configured.has(url.origin) ? `Bearer ${token}` : undefined),
      maxBytes: MAX_ATTACHMENT_BYTES,
      timeoutMs: this.timeoutMs,
    };
    const candidates: ImageCandidate[] = images.map(({ url, alt }) => {
      const parsed = parseUrl(url);
      const label = alt && !/^image$/i.test(alt) ? alt : url.slice(0, 200);
      const fileName = alt || parsed?.pathname.split("/").pop() || "image";
      return {
        label,
        fileName,
        ...(parsed && this.isGitHubImage(parsed)
          ? {}
          : { refused: "is not an image uploaded to GitHub, so it was not downloaded or attached." }),
        download: async () => {
          token ??= await this.token(repo);
          return boundedDownload(url, policy);
        },
      };
    });
    return collectImages(candidates, githubName);
  }

  private isGitHubImage(url: URL): boolean {
    if (url.username || url.password) return false;
    if (url.protocol === "https:" && STORAGE_HOSTS.has(url.hostname.toLowerCase())) return true;
    const web = this.configured.has(url.origin) || (url.protocol === "https:" && url.host === "github.com");
    return web && ATTACHMENT_PATH.test(url.pathname);
  }

  /** The installation token (or GITHUB_TOKEN) for the repository; without one, public images still load. */
  private async token(repo: string): Promise<string | undefined> {
    try {
      const octokit = await this.clients.forRepo(repo);
      const auth = (await octokit.auth({ type: "installation" })) as { token?: string };
      return auth.token;
    } catch (err) {
      this.log.warn({ err, repo }, "could not get a GitHub token to download comment images");
      return undefined;
    }
  }
}

/** `![alt](url "title")`, `![alt](<url>)` and `<img … src="url" alt="…">`, outside code fences and inline code. */
export function imagesIn(markdown: string): Array<{ url: string; alt: string }> {
  const text = markdown
    .replace(/^[ \t]{0,3}(```|~~~)[\s\S]*?(?:^[ \t]{0,3}\1[^\n]*$|(?![\s\S]))/gm, " ")
    .replace(/`[^`\n]+`/g, " ");
  const found: Array<{ index: number; url: string; alt: string }> = [];
  for (const m of text.matchAll(
    /!\[([^\]\n]*)\]\(\s*(?:<([^>\n]+)>|([^\s)]+))(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g,
  )) {
    found.push({ index: m.index, url: (m[2] ?? m[3])!, alt: m[1]!.trim() });
  }
  for (const m of text.matchAll(/<img\b[^>]*>/gi)) {
    const src = attribute(m[0], "src");
    if (src) found.push({ index: m.index, url: src, alt: attribute(m[0], "alt") ?? "" });
  }
  return found.sort((a, b) => a.index - b.index).map(({ url, alt }) => ({ url: decodeEntities(url), alt }));
}

function attribute(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, "i").exec(tag);
  return m ? (m[1] ?? m[2] ?? m[3])!.trim() : undefined;
}

function decodeEntities(url: string): string {
  return url.replace(/&amp;/g, "&");
}

function parseUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/** A name in inline code on GitHub: no backtick can end it early, no line break can start a new line. */
function githubName(label: string): string {
  return `\`${label.replace(/[`\r\n]/g, "'")}\``;
}
