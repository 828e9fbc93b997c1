import { AGENT_NAMES, AGENTS } from "../../model/agent-wording.ts";
import type { ChannelSettings, Store } from "../../store/store.ts";
import type { Actor } from "./access.ts";
import { channelSettingAudit } from "./channel-audit.ts";

/**
 * A Slack channel's default agent: `/agent agent claude` sets it, `/agent agent none` clears it,
 * `/agent agent` shows it. Runs started in the channel use it unless the command says `--agent …`; a
 * default whose provider key is not configured is refused at create like a typed one, and the person is
 * told the refusal came from the channel's setting.
 */

type ChannelStore = Pick<Store, "getChannelSettings" | "setChannelAgent" | "appendAuditEvent">;

function channelOf(actor: Actor) {
  return { platform: "slack" as const, workspace: actor.team, channel: actor.channel };
}

/** The channel's default agent (a harness registry key), when one is set. */
export async function channelAgent(store: Pick<Store, "getChannelSettings">, actor: Actor) {
  return (await store.getChannelSettings(channelOf(actor)))?.agent ?? undefined;
}

/**
 * `agent` (show, `agent` absent), `agent <name>` (set) or `agent none` (clear, null): the answer to the
 * person. Whoever may start runs here may change it; the listeners have checked that already.
 */
export async function channelAgentVerb(
  store: ChannelStore,
  actor: Actor,
  command: string,
  agent: string | null | undefined,
): Promise<string> {
  const how = `\`${command} agent ${AGENT_NAMES.join("|")}\` sets it, \`${command} agent none\` clears it; \`--agent <name>\` in a command chooses for that run.`;
  if (agent === undefined) {
    const settings = await store.getChannelSettings(channelOf(actor));
    if (!settings?.agent) {
      return `This channel has no default agent: runs started here use the server's default.\n${how}`;
    }
    return `This channel's default agent is *${labelOf(settings.agent)}* (\`${settings.agent}\`)${setBy(settings)}.\n${how}`;
  }
  await store.setChannelAgent(channelOf(actor), agent, actor.user, new Date().toISOString());
  await store.appendAuditEvent(channelSettingAudit(actor, "channel.agent_set", { agent }));
  return agent
    ? `Runs started in this channel now use *${labelOf(agent)}* (\`${agent}\`), unless the command says \`--agent <name>\`.`
    : "This channel has no default agent any more: runs started here use the server's default.";
}

/** The hint after a refused create whose agent came from the channel's default. */
export function channelAgentHint(command: string, agent: string): string {
  return `\n(\`${agent}\` is this channel's default agent: \`${command} agent\` changes it, \`--agent <name>\` overrides it for one run.)`;
}

function labelOf(key: string): string {
  return AGENTS[key]?.label ?? key;
}

function setBy(settings: ChannelSettings): string {
  return /^[UW][A-Z0-9]+$/.test(settings.updatedBy)
    ? ` (settings last changed by <@${settings.updatedBy}> ${settings.updatedAt.slice(0, 10)})`
    : "";
}
