import type { Button, KnownBlock, ModalView } from "@slack/types";
import { waitingFor } from "../../model/run-gates.ts";
import { truncate } from "../../model/run-wording.ts";
import { extendOffer, type RunView, runPageUrl, waitingReason } from "../../runs/waiting-run.ts";

/**
 * What the status card of a run waiting for a person adds (docs/surfaces.md, "Waiting for you"): what it
 * waits for, and the answers as buttons. A plan waiting for approval shows its beginning (the run page has
 * the whole) with Approve and Request changes; a run waiting for budget has Extend by $X and Stop here. The
 * card's Cancel button stays beside them.
 */

export const ACTION_APPROVE = "dispatch_approve";
/** Opens the Request changes modal; its submission (REVISE_VIEW) is the revise. */
export const ACTION_REVISE = "dispatch_revise";
/** A run waiting for budget: Extend by $X (extendOffer) and Stop here. */
export const ACTION_EXTEND_BUDGET = "dispatch_extend_budget";
export const ACTION_STOP_BUDGET = "dispatch_stop_budget";
export const REVISE_VIEW = "dispatch_revise_plan";
export const REVISE_BLOCK = "dispatch_revise_changes";
export const REVISE_INPUT = "changes";

/** How much of a plan the card shows: a card is read at a glance, and a section holds 3,000 characters. */
const PLAN_EXCERPT = { chars: 1_200, lines: 15 } as const;

/** The lines "Waiting for you: …" of a waiting run, in plain text (the card's fallback, `status`). */
export function waitingText(run: RunView): string | undefined {
  const reason = waitingReason(run);
  if (reason === undefined) return undefined;
  const message = run.status_message?.message;
  return [`Waiting for ${waitingFor(reason)}`, message].filter(Boolean).join(": ");
}

/** The card's blocks for a waiting run (none for a run not waiting), escaped with the card's `mrkdwn`. */
export function waitingBlocks(run: RunView, mrkdwn: (text: string) => string): KnownBlock[] {
  const reason = waitingReason(run);
  if (reason === undefined) return [];
  const message = run.status_message?.message;
  const blocks: KnownBlock[] = [
    {
      type: "section",
      text: {
        type: "mrkdwn",
        text: truncate(
          `:raised_hand: *Waiting for ${mrkdwn(waitingFor(reason))}*${message ? `\n${mrkdwn(message)}` : ""}`,
          3_000,
        ),
      },
    },
  ];
  if (reason === "awaiting_approval") {
    const whole = `<${runPageUrl(run)}|the run page>`;
    const excerpt = run.plan ? planExcerpt(run.plan) : undefined;
    const text = excerpt
      ? `${quote(mrkdwn(excerpt.text))}\n${excerpt.cut ? `The plan goes on: read the whole on ${whole}.` : `The plan is also on ${whole}.`}`
      : `The plan is on ${whole}.`;
    blocks.push({ type: "section", text: { type: "mrkdwn", text } });
  }
  // awaiting_budget and awaiting_input: their message above says what is needed; their answers come here.
  return blocks;
}

/** The buttons that answer what the run waits for, before the card's Cancel. */
export function waitingButtons(run: RunView): Button[] {
  switch (waitingReason(run)) {
    case "awaiting_approval":
      return [
        {
          type: "button",
          action_id: ACTION_APPROVE,
          text: { type: "plain_text", text: "Approve" },
          value: run.run_id,
          style: "primary",
        },
        {
          type: "button",
          action_id: ACTION_REVISE,
          text: { type: "plain_text", text: "Request changes" },
          value: run.run_id,
        },
      ];
    case "awaiting_budget":
      return [
        {
          type: "button",
          action_id: ACTION_EXTEND_BUDGET,
          text: { type: "plain_text", text: `Extend by $${extendOffer(run)}` },
          value: run.run_id,
          style: "primary",
        },
        {
          type: "button",
          action_id: ACTION_STOP_BUDGET,
          text: { type: "plain_text", text: "Stop here" },
          value: run.run_id,
        },
      ];
    default:
      return [];
  }
}

/** The beginning of a plan, and whether it was cut. */
function planExcerpt(plan: string): { text: string; cut: boolean } {
  const lines = plan.split(/\r?\n/);
  const head = lines.slice(0, PLAN_EXCERPT.lines).join("\n");
  const text = truncate(head, PLAN_EXCERPT.chars);
  return { text, cut: lines.length > PLAN_EXCERPT.lines || text !== head };
}

function quote(text: string): string {
  return text
    .split("\n")
    .map((line) => `> ${line}`)
    .join("\n");
}

/** Where a Request changes modal was opened from: its submission acts there, on that card's run. */
export interface ReviseOrigin {
  runId: string;
  channel: string;
  cardTs: string;
  threadTs?: string;
}

/** The Request changes modal: one text input; what it was opened from rides in private_metadata. */
export function reviseModal(origin: ReviseOrigin, title: string): ModalView {
  return {
    type: "modal",
    callback_id: REVISE_VIEW,
    private_metadata: JSON.stringify(origin),
    title: { type: "plain_text", text: "Request changes" },
    submit: { type: "plain_text", text: "Revise the plan" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      {
        type: "section",
        text: { type: "plain_text", text: truncate(`The plan of: ${title}`, 3_000) },
      },
      {
        type: "input",
        block_id: REVISE_BLOCK,
        label: { type: "plain_text", text: "What should change in the plan?" },
        element: {
          type: "plain_text_input",
          action_id: REVISE_INPUT,
          multiline: true,
          max_length: 3_000,
        },
      },
    ],
  };
}

/** The origin a submitted modal carries, when it is one this app made; undefined otherwise. */
export function reviseOrigin(privateMetadata: unknown): ReviseOrigin | undefined {
  try {
    const o = JSON.parse(String(privateMetadata)) as Partial<ReviseOrigin>;
    if (typeof o.runId !== "string" || typeof o.channel !== "string" || typeof o.cardTs !== "string") {
      return undefined;
    }
    return {
      runId: o.runId,
      channel: o.channel,
      cardTs: o.cardTs,
      ...(typeof o.threadTs === "string" ? { threadTs: o.threadTs } : {}),
    };
  } catch {
    return undefined;
  }
}
