import type { App } from "@slack/bolt";
import type { KnownBlock } from "@slack/types";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { stateWord } from "../../model/run-wording.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import { slackPrincipalId } from "./slack-audience.ts";

// biome-ignore lint/suspicious/noExplicitAny: Slack payloads are read field by field, defensively
type Payload = Record<string, any>;

/** Runs listed on a person's App Home. */
const HOME_RUNS = 10;
/** Recent runs of the team looked through for a person's own (RunsApi lists by team, not by requester). */
const HOME_SCAN = 100;

const STATE_EMOJI: Record<string, string> = {
  QUEUED: ":hourglass_flowing_sand:",
  INPROGRESS: ":arrows_counterclockwise:",
  SUCCEEDED: ":white_check_mark:",
  FAILED: ":x:",
  ERROR: ":x:",
  CANCELLED: ":no_entry_sign:",
};

export interface AssistantDeps {
  store: Pick<Store, "getChannelSettings">;
  runs: Pick<RunsApi, "list">;
  log: Logger;
}

/**
 * The assistant pane and the App Home (docs/surfaces.md, "Slack's agent surface"). When a person opens an
 * assistant thread, it suggests prompts (naming the repository of the channel they are looking at, when
 * that channel has one); their messages there start runs like a mention does (listeners.ts). The App Home
 * tab lists their latest runs with their state and a link to each.
 */
export class AssistantPane {
  private readonly deps: AssistantDeps;

  constructor(deps: AssistantDeps) {
    this.deps = deps;
  }

  register(app: App): void {
    app.event("assistant_thread_started", async ({ event, body, client }) => {
      await this.onThreadStarted(event as unknown as Payload, body as Payload, client);
    });
    app.event("app_home_opened", async ({ event, body, client }) => {
      const e = event as unknown as Payload;
      if (e.tab !== "home") return;
      await this.publishHome(client, String((body as Payload).team_id ?? ""), String(e.user));
    });
  }

  private async onThreadStarted(event: Payload, body: Payload, client: WebClient): Promise<void> {
    const thread = event.assistant_thread as Payload | undefined;
    if (!thread?.channel_id || !thread.thread_ts) return;
    const team = String(body.team_id ?? thread.context?.team_id ?? "");
    const viewed = thread.context?.channel_id as string | undefined;
    const settings = viewed
      ? await this.deps.store.getChannelSettings({ platform: "slack", workspace: team, channel: viewed })
      : undefined;
    await client.assistant.threads.setSuggestedPrompts({
      channel_id: thread.channel_id,
      thread_ts: thread.thread_ts,
      title: "Hand a task to an agent",
      prompts: suggestedPrompts(settings?.repository ?? undefined),
    });
  }

  /** The person's App Home: their latest runs, state first, each linking to its page. */
  async publishHome(client: WebClient, team: string, user: string): Promise<void> {
    const uid = slackPrincipalId(team, user);
    const { runs } = await this.deps.runs.list({
      limit: HOME_SCAN,
      sort_by: "updated_at",
      sort_order: "desc",
    });
    const mine = runs.filter((r) => r.creator?.uid === uid).slice(0, HOME_RUNS);
    await client.views.publish({ user_id: user, view: { type: "home", blocks: homeBlocks(mine) } });
  }
}

/** What the assistant pane offers to start with; each sends its message as the person's first request. */
export function suggestedPrompts(repository: string | undefined): Array<{ title: string; message: string }> {
  const where = repository ? ` in ${repository}` : "";
  const repo = repository ? ` in ${repository}` : " in <owner/repo>";
  return [
    { title: `Fix a failing test${where}`, message: `Fix the failing test${repo}: ` },
    { title: "Review a change", message: `Review the latest changes${repo} and list what to fix` },
    { title: "Explain some code", message: `Explain how${repo} handles ` },
  ];
}

/** Slack's mrkdwn escapes: run titles are people's text. */
function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function homeBlocks(runs: RunItem[]): KnownBlock[] {
  const header: KnownBlock = { type: "header", text: { type: "plain_text", text: "My runs" } };
  if (runs.length === 0) {
    return [
      header,
      {
        type: "section",
        text: {
          type: "mrkdwn",
          text: "No runs yet. Mention me in a channel, or open a chat with me to start one.",
        },
      },
    ];
  }
  return [
    header,
    ...runs.map(
      (r): KnownBlock => ({
        type: "section",
        text: {
          type: "mrkdwn",
          text: `${STATE_EMOJI[r.state] ?? ""} *<${r.session_link}|${escapeMrkdwn(r.title)}>*\n${escapeMrkdwn(stateLine(r))}`,
        },
      }),
    ),
  ];
}

function stateLine(r: RunItem): string {
  const msg = r.status_message?.message;
  return `${stateWord(r.state)}${msg ? ` · ${msg.split("\n")[0]?.slice(0, 150)}` : ""}`;
}
