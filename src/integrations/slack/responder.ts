import type { ModalView } from "@slack/types";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import type { Actor } from "./access.ts";

/**
 * The Web API calls the Slack app answers with. Each is best effort: the request was acknowledged long
 * ago, so a failed answer is logged and the work goes on.
 */
export class Responder {
  private readonly client: WebClient;
  private readonly log: Logger;

  constructor(client: WebClient, log: Logger) {
    this.client = client;
    this.log = log;
  }

  /** A message only `actor.user` sees, in `actor.channel` (in a thread when `threadTs` is given). */
  async ephemeral(actor: Actor, text: string, threadTs?: string, blocks?: unknown[]): Promise<void> {
    try {
      await this.client.chat.postEphemeral({
        channel: actor.channel,
        user: actor.user,
        text,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        ...(blocks ? { blocks: blocks as never } : {}),
      });
    } catch (err) {
      this.log.warn({ err, channel: actor.channel }, "could not send an ephemeral Slack message");
    }
  }

  /** Opens a modal for the person whose click carried `triggerId`; false when Slack refused. */
  async openModal(triggerId: string, view: ModalView): Promise<boolean> {
    try {
      await this.client.views.open({ trigger_id: triggerId, view });
      return true;
    } catch (err) {
      this.log.warn({ err }, "could not open a Slack modal");
      return false;
    }
  }

  async react(channel: string, ts: string, name: string): Promise<void> {
    try {
      await this.client.reactions.add({ channel, timestamp: ts, name });
    } catch (err) {
      // already_reacted on a retried delivery is fine; anything else is worth a line in the log.
      if ((err as { data?: { error?: string } }).data?.error !== "already_reacted") {
        this.log.warn({ err, channel }, "could not add a Slack reaction");
      }
    }
  }

  async permalink(channel: string, ts: string): Promise<string | undefined> {
    try {
      const res = await this.client.chat.getPermalink({ channel, message_ts: ts });
      return res.permalink;
    } catch (err) {
      this.log.warn({ err, channel }, "could not get a Slack permalink");
      return undefined;
    }
  }
}
