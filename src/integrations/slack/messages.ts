import { AGENT_NAMES } from "../../model/agent-wording.ts";
import type { FollowupOutcome } from "../../model/run.ts";
import { stateWord } from "../../model/run-wording.ts";
import type { RunItem } from "../../runs/run-item.ts";
import { describeOptions, OPTION_KEYS, optionsFromAgentConfig } from "../grammar.ts";
import { escapeMrkdwn, stateEmoji } from "./status-card.ts";

/** What Slack users read: help, refusals, short run summaries (the status card is the notifier's). */

/**
 * Slack's markup in what people typed, turned back into plain text: `<url|label>` and `<url>` links
 * become the URL, `<#C1|name>` becomes #name, and &amp; &lt; &gt; are decoded. User mentions stay.
 */
export function plainText(text: string): string {
  return text
    .replace(/<#[A-Z0-9]+\|([^>]*)>/g, "#$1")
    .replace(/<((?:https?|mailto):[^|>]+)(?:\|[^>]*)?>/g, "$1")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
}

export function helpText(command: string): string {
  return [
    "*Dispatch* hands work to a coding agent. Each request becomes a run reported in a thread.",
    "",
    `• \`${command} <prompt> [options]\` start a run; a status card is posted in this channel`,
    `• \`${command} status [run]\` · \`${command} list\` · \`${command} cancel <run>\``,
    `• \`${command} followup <run> <message>\` send the run more instructions`,
    `• \`${command} plan <prompt> [options]\` the agent plans first; its card waits with *Approve* and *Request changes* (or \`@Dispatch approve [note]\` · \`@Dispatch revise <changes>\` in its thread)`,
    `• \`${command} in owner/repo[@branch] <prompt>\` work in that repository and open a pull request (against the branch)`,
    `• \`${command} repo owner/repo[@branch]\` sets this channel's default repository · \`${command} repo\` shows it · \`${command} repo none\` clears it`,
    `• \`${command} --agent ${AGENT_NAMES.join("|")} <prompt>\` chooses the agent · \`${command} agent <name>\` sets this channel's default agent · \`${command} agent\` shows it · \`${command} agent none\` clears it`,
    "• `@Dispatch <prompt>` in a channel starts a run in a thread under your message; in that thread,",
    "  `@Dispatch <text>` is a follow-up, `@Dispatch cancel`, `@Dispatch status`, `@Dispatch new <prompt>`",
    `• \`${command} schedule "<cron>" [name:<name>] <prompt> [options]\` runs the prompt on a 5-field cron (UTC, e.g. \`"0 9 * * 1-5"\` is weekdays at 09:00); each run posts its status card here. Without \`name:\` the schedule is named after the prompt's first words`,
    `• \`${command} schedules\` lists this channel's schedules · \`${command} unschedule <name>\` deletes one`,
    `• \`${command} login\` answers (only to you) a one-time link that signs you in to Dispatch's web page of your team's runs`,
    "",
    `Options: \`key=value\` anywhere or \`[key=value, key="two words"]\`; keys: ${OPTION_KEYS.join(", ")}`,
    "(`env` is the environment). Text in `code` or ```code blocks``` is never read as options.",
  ].join("\n");
}

/** `repo` without a repository: what the channel's default is, and how to change it. */
export function channelRepositoryText(
  command: string,
  repository: string | undefined,
  changed?: { by: string; at: string },
): string {
  const how = `\`${command} repo owner/repo[@branch]\` sets it, \`${command} repo none\` clears it.`;
  if (!repository) {
    return `This channel has no default repository: runs started here work in an empty workspace unless the command says \`in owner/repo\`.\n${how}`;
  }
  const who =
    changed && /^[UW][A-Z0-9]+$/.test(changed.by)
      ? ` (set by <@${changed.by}> ${changed.at.slice(0, 10)})`
      : "";
  return `This channel's default repository is \`${escapeMrkdwn(repository)}\`${who}: runs started here work in it unless the command says \`in owner/repo\`.\n${how}`;
}

export function grammarErrorText(message: string, command: string): string {
  return `:warning: ${message}\nSee \`${command} help\`.`;
}

export function followupText(outcome: FollowupOutcome): string {
  switch (outcome) {
    case "queued_prompt":
      return "Follow-up added: the run has not started yet, the agent gets it when it starts.";
    case "live_session":
      return "Follow-up sent to the running agent.";
    case "queue_pending":
      return "Follow-up added: the run is getting ready, the agent gets it when it starts.";
    case "handoff_execution":
      return "The run had finished; it continues with your follow-up.";
  }
}

/** One line per run: state, title, options, session link. */
export function runLine(run: RunItem): string {
  const options = describeOptions(optionsFromAgentConfig(run.agent_config ?? {}));
  return [
    `${stateEmoji(run.state)} *${escapeMrkdwn(run.title)}* — ${stateWord(run.state)}`,
    options ? ` · ${escapeMrkdwn(options)}` : "",
    ` · <${run.session_link}|Open session> · \`${run.run_id}\``,
  ].join("");
}

/** The short status used when the notifier's card renderer is not available. */
export function statusText(run: RunItem): string {
  const lines = [runLine(run)];
  if (run.status_message && run.state !== "SUCCEEDED")
    lines.push(`> ${escapeMrkdwn(run.status_message.message)}`);
  for (const artifact of run.artifacts ?? []) {
    const url = (artifact.data as { url?: unknown }).url;
    if (artifact.artifact_type === "PULL_REQUEST" && typeof url === "string")
      lines.push(`Pull request: ${url}`);
  }
  return lines.join("\n");
}

export function listText(runs: RunItem[], heading: string): string {
  if (runs.length === 0) return `${heading}: none yet.`;
  return [`${heading}:`, ...runs.map(runLine)].join("\n");
}
