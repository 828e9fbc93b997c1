import { isRateLimitError } from "jira.js/core";
import { adfToMarkdown, isAdfDocument } from "./adf-markdown.ts";
import { type CommentDoc, toAdf, toWiki } from "./comment-doc.ts";
import type { JiraTransport } from "./jira-transport.ts";
import { wikiToMarkdown } from "./wiki-markdown.ts";

/** Each request is given up after this long (a hung request would hold an outbox row's lease). */
const REQUEST_TIMEOUT_MS = 15_000;
/** The comment property that names what Dispatch wrote, so a comment whose answer was lost is found again. */
export const MESSAGE_PROPERTY = "dispatch.message";
/** How many of an issue's latest comments are looked through for one of Dispatch's. */
const COMMENT_PAGES = 3;
const COMMENT_PAGE_SIZE = 100;
/** The project permission that puts a person in the audience of a project's runs (docs/surfaces.md). */
export const BROWSE_PERMISSION = "BROWSE_PROJECTS";

/** An issue as a run's prompt and repository choice read it. */
export interface JiraIssue {
  id: string;
  key: string;
  projectKey: string;
  summary: string;
  /** The description as Markdown (from ADF or wiki markup). */
  description: string;
  status: string;
  /** The issue's page. */
  url: string;
}

export type TransitionOutcome = "moved" | "already" | "unavailable";

/**
 * What the Jira surface asks of a site, the same on Cloud and Data Center: the transport speaks the
 * flavour's REST version, this class renders comments in its rich text (ADF or wiki markup), reads rich
 * text back as Markdown, matches transitions by name and finds its own comments again. Errors are the
 * transport's (jira.js's typed errors); jira-errors.ts classifies them.
 */
export class JiraApi {
  private readonly transport: JiraTransport;
  private readonly baseUrl: string;
  private readonly botId: string;

  constructor(opts: { transport: JiraTransport; baseUrl: string; botId: string }) {
    this.transport = opts.transport;
    this.baseUrl = opts.baseUrl;
    this.botId = opts.botId;
  }

  get flavour(): JiraTransport["flavour"] {
    return this.transport.flavour;
  }

  /** An issue's page (or a comment's, with `commentId`). */
  issueUrl(key: string, commentId?: string): string {
    const page = `${this.baseUrl}/browse/${encodeURIComponent(key)}`;
    return commentId ? `${page}?focusedCommentId=${encodeURIComponent(commentId)}` : page;
  }

  async issue(issueIdOrKey: string): Promise<JiraIssue> {
    const raw = await deadline(this.transport.getIssue(issueIdOrKey));
    const description = raw.fields.description;
    return {
      id: String(raw.id),
      key: raw.key,
      projectKey: raw.fields.project?.key ?? raw.key.replace(/-\d+$/, ""),
      summary: raw.fields.summary ?? "",
      description: isAdfDocument(description)
        ? adfToMarkdown(description)
        : typeof description === "string"
          ? wikiToMarkdown(description)
          : "",
      status: raw.fields.status?.name ?? "",
      url: this.issueUrl(raw.key),
    };
  }

  /**
   * The URLs linked on the issue: its remote links, then the pull requests of its development panel
   * (GitHub pull requests and issues among them). The panel is read as a bonus: a site without it, or
   * an answer it does not give, leaves the remote links.
   */
  async linkedUrls(issueId: string): Promise<string[]> {
    const links = await deadline(this.transport.getRemoteLinks(issueId));
    const urls = links.map((l) => l.object?.url);
    try {
      const development = await deadline(this.transport.getDevelopmentPullRequests(issueId));
      for (const tool of development?.detail ?? [])
        urls.push(...(tool.pullRequests ?? []).map((pr) => pr.url));
    } catch (err) {
      if (retryAfterOf(err) !== undefined) throw err;
    }
    return urls.filter((u): u is string => typeof u === "string");
  }

  /** Posts a comment carrying `marker` as a property; its id. */
  async addComment(issueIdOrKey: string, doc: CommentDoc, marker: string): Promise<string> {
    const created = await deadline(
      this.transport.addComment(issueIdOrKey, this.render(doc), [
        { key: MESSAGE_PROPERTY, value: { marker } },
      ]),
    );
    return created.id;
  }

  async updateComment(issueIdOrKey: string, commentId: string, doc: CommentDoc): Promise<void> {
    await deadline(this.transport.updateComment(issueIdOrKey, commentId, this.render(doc)));
  }

  /** The service account's comment that carries `marker`, among the issue's latest comments. */
  async findComment(issueIdOrKey: string, marker: string): Promise<string | undefined> {
    for (let page = 0; page < COMMENT_PAGES; page++) {
      const { comments, total } = await deadline(
        this.transport.listComments(issueIdOrKey, page * COMMENT_PAGE_SIZE, COMMENT_PAGE_SIZE),
      );
      const found = comments.find(
        (c) =>
          (c.author?.accountId ?? c.author?.name) === this.botId &&
          (c.properties ?? []).some(
            (p) =>
              p.key === MESSAGE_PROPERTY && (p.value as { marker?: unknown } | undefined)?.marker === marker,
          ),
      );
      if (found?.id) return String(found.id);
      if (comments.length < COMMENT_PAGE_SIZE || (total ?? 0) <= (page + 1) * COMMENT_PAGE_SIZE) break;
    }
    return undefined;
  }

  /**
   * Moves the issue with the transition named `to` (the transition's name or its target status, as the
   * settings name it, in any case): `already` when the issue is in that status, `unavailable` when its
   * workflow offers no such transition from where it is.
   */
  async moveTo(issueIdOrKey: string, to: string): Promise<TransitionOutcome> {
    const wanted = to.trim().toLowerCase();
    const issue = await deadline(this.transport.getIssue(issueIdOrKey));
    if ((issue.fields.status?.name ?? "").toLowerCase() === wanted) return "already";
    const transitions = await deadline(this.transport.getTransitions(issueIdOrKey));
    const match =
      transitions.find((t) => t.name?.toLowerCase() === wanted) ??
      transitions.find((t) => t.to?.name?.toLowerCase() === wanted);
    if (!match?.id) return "unavailable";
    await deadline(this.transport.doTransition(issueIdOrKey, match.id));
    return "moved";
  }

  /** Links the pull request on the issue; the same URL updates the link it has (its global id). */
  async linkPullRequest(issueIdOrKey: string, pr: { url: string; title: string }): Promise<void> {
    await deadline(
      this.transport.createOrUpdateRemoteLink(issueIdOrKey, {
        globalId: `dispatch:${pr.url}`,
        url: pr.url,
        title: pr.title,
        summary: "Pull request opened by Dispatch",
      }),
    );
  }

  /** Whether the user (account id or username) may browse the project, as Jira says now. */
  async canBrowse(userId: string, projectKey: string): Promise<boolean> {
    const users = await deadline(this.transport.usersWithPermission(userId, projectKey, BROWSE_PERMISSION));
    return users.some((u) => (u.accountId ?? u.name) === userId);
  }

  private render(doc: CommentDoc): unknown {
    return this.transport.flavour === "cloud" ? toAdf(doc) : toWiki(doc);
  }
}

/** A 429 is the site's, whatever path answered it: it is waited out, not ignored. */
function retryAfterOf(err: unknown): number | undefined {
  return isRateLimitError(err) ? (err.retryAfterMs ?? 0) : undefined;
}

class JiraTimeout extends Error {
  readonly transient = true;
}

export function isJiraTimeout(err: unknown): boolean {
  return err instanceof JiraTimeout;
}

/** The call, or a JiraTimeout once it has taken REQUEST_TIMEOUT_MS (jira.js has no deadline of its own). */
function deadline<T>(call: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new JiraTimeout(`Jira did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`)),
      REQUEST_TIMEOUT_MS,
    );
  });
  return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
}
