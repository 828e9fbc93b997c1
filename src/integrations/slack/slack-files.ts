import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { MAX_ATTACHMENT_BYTES } from "../../model/attachment.ts";
import { boundedDownload, type DownloadPolicy } from "../attachments/bounded-download.ts";
import { type CollectedImages, collectImages, type ImageCandidate } from "../attachments/collect-images.ts";
import { escapeMrkdwn } from "./status-card.ts";

// biome-ignore lint/suspicious/noExplicitAny: Slack file objects are read field by field, defensively
type SlackFile = Record<string, any>;

/** A download of one file may take this long (a 5 MB file on a slow link included). */
const DOWNLOAD_TIMEOUT_MS = 30_000;

/**
 * The files shared with a mention (a new run, or a follow-up in a run's thread), as the run's image
 * attachments. Slack puts them in the event's `files` (@slack/types AppMentionEvent); each is downloaded
 * from its `url_private` with the bot token (scope `files:read`). Slash commands carry no files.
 *
 * The bot token goes only to Slack: a `url_private` is fetched only from slack.com hosts (https) or from
 * the origin of the configured Web API (SLACK_API_URL: an Enterprise proxy, or the loopback fake in
 * tests). A file shown with `file_access: "check_file_info"` (Slack Connect) is looked up with files.info
 * first. Downloads happen when a stored delivery is handled, never before Slack is acknowledged.
 */
export class SlackFiles {
  private readonly client: Pick<WebClient, "files">;
  private readonly apiOrigin: string;
  private readonly policy: DownloadPolicy;
  private readonly log: Logger;

  constructor(opts: {
    botToken: string;
    apiUrl: string;
    client: Pick<WebClient, "files">;
    log: Logger;
    timeoutMs?: number;
  }) {
    this.client = opts.client;
    this.apiOrigin = new URL(opts.apiUrl).origin;
    this.log = opts.log;
    const slackHost = (url: URL) => this.isSlackHost(url);
    this.policy = {
      allowed: slackHost,
      tokenFor: (url) => (slackHost(url) ? `Bearer ${opts.botToken}` : undefined),
      maxBytes: MAX_ATTACHMENT_BYTES,
      timeoutMs: opts.timeoutMs ?? DOWNLOAD_TIMEOUT_MS,
    };
  }

  /** The event's files as attachments, and a sentence for each one that is not attached. */
  async collect(files: unknown): Promise<CollectedImages> {
    if (!Array.isArray(files) || files.length === 0) return { attachments: [], notes: [] };
    const candidates: ImageCandidate[] = [];
    for (const given of files as SlackFile[]) {
      const file = await this.complete(given);
      candidates.push(this.candidate(file));
    }
    return collectImages(candidates, slackName);
  }

  /** A file object shown only by id (Slack Connect: `file_access: "check_file_info"`), filled in. */
  private async complete(file: SlackFile): Promise<SlackFile> {
    if (file?.file_access !== "check_file_info" && file?.url_private) return file;
    if (typeof file?.id !== "string") return file ?? {};
    try {
      const res = await this.client.files.info({ file: file.id });
      return (res.file as SlackFile | undefined) ?? file;
    } catch (err) {
      this.log.warn({ err, file: file.id }, "could not read a Slack file's details");
      return file;
    }
  }

  private candidate(file: SlackFile): ImageCandidate {
    const label = String(file.name ?? file.title ?? file.id ?? "a file");
    const url = typeof file.url_private === "string" ? file.url_private : undefined;
    const base = {
      label,
      fileName: label,
      ...(typeof file.mimetype === "string" ? { declaredType: file.mimetype } : {}),
      ...(typeof file.size === "number" ? { declaredSize: file.size } : {}),
      download: () => boundedDownload(url!, this.policy),
    };
    if (file.mode === "tombstone") return { ...base, refused: "was deleted, so it was not attached." };
    if (file.is_external || file.mode === "external") {
      return { ...base, refused: "is stored outside Slack, so it was not attached." };
    }
    if (!url) return { ...base, refused: "could not be read from Slack, so it was not attached." };
    if (!this.isSlackHost(safeUrl(url))) {
      return { ...base, refused: "is not hosted by Slack, so it was not downloaded or attached." };
    }
    return base;
  }

  private isSlackHost(url: URL | undefined): boolean {
    if (!url) return false;
    if (url.origin === this.apiOrigin) return true;
    if (url.protocol !== "https:" || url.username || url.password) return false;
    const host = url.hostname.toLowerCase();
    return ["slack.com", "slack-gov.com"].some((d) => host === d || host.endsWith(`.${d}`));
  }
}

function safeUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/** A file name in mrkdwn inline code: nothing in it can mention, link or end the code span. */
function slackName(label: string): string {
  return `\`${escapeMrkdwn(label.replace(/[`\n\r]/g, "'"))}\``;
}
