import { z } from "zod";
import { adfMentions, adfToMarkdown, isAdfDocument } from "./adf-markdown.ts";
import { wikiMentions, wikiToMarkdown } from "./wiki-markdown.ts";

/**
 * What counts in a Jira webhook (docs/surfaces.md, Jira), decided on the verified payload before anything
 * is stored: `comment_created` mentioning the service account, `jira:issue_updated` whose changelog adds
 * the label or assigns the issue to the service account. Comments by the service account itself are
 * ignored (it never acts on its own words). A trigger keeps only what handling it needs.
 */

/** A Jira user as webhooks carry them: an account id on Cloud, a username (`name`) on Data Center. */
const User = z
  .object({
    accountId: z.string().min(1).optional(),
    name: z.string().min(1).optional(),
    displayName: z.string().optional(),
  })
  .loose();

const Issue = z
  .object({
    id: z.string().min(1),
    key: z.string().regex(/^[A-Z][A-Z0-9_]*-\d+$/),
    fields: z.object({ project: z.object({ key: z.string().min(1) }).loose() }).loose(),
  })
  .loose();

const CommentEvent = z
  .object({
    webhookEvent: z.literal("comment_created"),
    issue: Issue,
    comment: z
      .object({
        id: z.string().min(1),
        author: User,
        // Wiki markup (Data Center, and Cloud's REST v2 payloads) or an ADF document.
        body: z.union([z.string(), z.record(z.string(), z.unknown())]),
      })
      .loose(),
  })
  .loose();

/**
 * A text field of a changelog item, or null. Read as unknown first: a key an item leaves out would be
 * found on the object's prototype (`toString` is every object's), which is not Jira's value.
 */
const ItemText = z
  .unknown()
  .optional()
  .transform((v) => (typeof v === "string" ? v : null));

const ChangelogItem = z
  .object({ field: z.string(), from: ItemText, fromString: ItemText, to: ItemText, toString: ItemText })
  .loose();

const IssueUpdatedEvent = z
  .object({
    webhookEvent: z.literal("jira:issue_updated"),
    issue: Issue,
    user: User,
    changelog: z.object({ id: z.string().min(1), items: z.array(ChangelogItem) }).loose(),
  })
  .loose();

export interface JiraActor {
  /** Account id (Cloud) or username (Data Center): how the person is named to Jira and to Dispatch. */
  id: string;
  name: string;
}

export interface JiraTrigger {
  kind: "comment" | "label" | "assigned";
  issue: { id: string; key: string; projectKey: string };
  actor: JiraActor;
  /** The comment that mentioned the service account: its text as Markdown, the mention taken out. */
  comment?: { id: string; command: string };
  /** The changelog entry of a label or an assignment (a redelivery carries the same id). */
  changelogId?: string;
}

export interface TriggerSettings {
  /** The service account: an account id on Cloud, a username on Data Center. */
  botId: string;
  /** The label that starts a run (settings `jira.label`). */
  label: string;
}

/** The trigger the payload carries, or why it is none (acknowledged and ignored). */
export function parseTrigger(payload: unknown, settings: TriggerSettings): JiraTrigger | { ignored: string } {
  const event = (payload as { webhookEvent?: unknown } | null)?.webhookEvent;
  if (event === "comment_created") {
    const parsed = CommentEvent.safeParse(payload);
    if (!parsed.success) return { ignored: "not a comment event Dispatch can read" };
    return commentTrigger(parsed.data, settings);
  }
  if (event === "jira:issue_updated") {
    const parsed = IssueUpdatedEvent.safeParse(payload);
    if (!parsed.success) return { ignored: "not an issue update Dispatch can read" };
    return updateTrigger(parsed.data, settings);
  }
  return { ignored: `event ${typeof event === "string" ? event.slice(0, 60) : "unknown"}` };
}

function actorOf(user: z.infer<typeof User>): JiraActor | undefined {
  const id = user.accountId ?? user.name;
  return id ? { id, name: user.displayName || id } : undefined;
}

function issueOf(issue: z.infer<typeof Issue>): JiraTrigger["issue"] {
  return { id: issue.id, key: issue.key, projectKey: issue.fields.project.key };
}

function commentTrigger(
  e: z.infer<typeof CommentEvent>,
  settings: TriggerSettings,
): JiraTrigger | { ignored: string } {
  const actor = actorOf(e.comment.author);
  if (!actor) return { ignored: "comment without an author" };
  if (actor.id === settings.botId) return { ignored: "own comment" };
  const body = e.comment.body;
  const dropBot = { mention: (id: string, text: string) => (id === settings.botId ? "" : text) };
  let mentioned: string[];
  let markdown: string;
  if (typeof body === "string") {
    mentioned = wikiMentions(body);
    markdown = wikiToMarkdown(body, dropBot);
  } else if (isAdfDocument(body)) {
    mentioned = adfMentions(body);
    markdown = adfToMarkdown(body, dropBot);
  } else {
    return { ignored: "comment body is neither wiki markup nor a document" };
  }
  if (!mentioned.includes(settings.botId)) return { ignored: "no mention" };
  return {
    kind: "comment",
    issue: issueOf(e.issue),
    actor,
    comment: { id: e.comment.id, command: tidy(markdown) },
  };
}

function updateTrigger(
  e: z.infer<typeof IssueUpdatedEvent>,
  settings: TriggerSettings,
): JiraTrigger | { ignored: string } {
  const actor = actorOf(e.user);
  if (!actor) return { ignored: "update without a user" };
  if (actor.id === settings.botId) return { ignored: "own change" };
  const base = { issue: issueOf(e.issue), actor, changelogId: e.changelog.id };
  const wanted = settings.label.toLowerCase();
  for (const item of e.changelog.items) {
    if (item.field === "labels") {
      const before = labels(item.fromString);
      if (labels(item.toString).has(wanted) && !before.has(wanted)) return { kind: "label", ...base };
    }
    if (item.field === "assignee" && item.to === settings.botId) return { kind: "assigned", ...base };
  }
  return { ignored: "neither the label added nor assigned to Dispatch" };
}

/** Jira writes an issue's labels as one space-separated string in a changelog. */
function labels(value: string | null): Set<string> {
  return new Set((value ?? "").toLowerCase().split(/\s+/).filter(Boolean));
}

/** What is left once the mention is taken out ("@Dispatch, cancel" → "cancel"). */
function tidy(text: string): string {
  return text
    .replace(/^[ \t]*[,:]/, "")
    .replace(/(\S)[ \t]+([,:])/g, "$1$2")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}
