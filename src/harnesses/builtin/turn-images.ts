import type { FilePart, TextPart, UserModelMessage } from "ai";
import type { AttachmentContent } from "../../model/attachment.ts";
import type { RunEvent } from "../../model/run.ts";

/** The group of a run's create, next to follow-up ids. */
export const CREATE = "create";

/** A transcript note for images a model without vision was not shown; written once per create or follow-up. */
export interface ImageNote {
  group: string;
  names: string[];
}

/**
 * Puts each image attachment into the user message of the turn it came with: the create's into the
 * prompt, a follow-up's into the message that delivers that follow-up. A message delivered by text only
 * (execution input, steering) is matched to the oldest follow-up with that text that has not been
 * delivered yet, which is the order follow-ups are handed over in. A model without vision gets a note
 * in the text instead, and the transcript says so once (see `takeNotes`).
 */
export class TurnImages {
  readonly #vision: boolean;
  readonly #modelId: string;
  #byGroup = new Map<string, AttachmentContent[]>();
  /** Follow-up id → its message, oldest first. */
  #followups = new Map<string, string>();
  readonly #delivered = new Set<string>();
  readonly #noted = new Set<string>();
  #notes: ImageNote[] = [];

  constructor(opts: { vision: boolean; modelId: string }) {
    this.#vision = opts.vision;
    this.#modelId = opts.modelId;
  }

  /** Re-reads what the run has (follow-ups arrive while it runs); what was delivered stays delivered. */
  update(attachments: readonly AttachmentContent[], events: readonly RunEvent[]): void {
    const byGroup = new Map<string, AttachmentContent[]>();
    for (const a of attachments) {
      const group = a.followupId ?? CREATE;
      byGroup.set(group, [...(byGroup.get(group) ?? []), a]);
    }
    this.#byGroup = byGroup;
    const followups = new Map<string, string>();
    for (const e of events) {
      if (e.type === "followup" && typeof e.data.followup_id === "string") {
        followups.set(e.data.followup_id, String(e.data.message ?? ""));
      }
      if (e.type === "log" && e.data.phase === "attachments" && typeof e.data.attachments_of === "string") {
        this.#noted.add(e.data.attachments_of);
      }
    }
    this.#followups = followups;
  }

  /** Whether the run has any image at all (nothing to do otherwise). */
  get any(): boolean {
    return this.#byGroup.size > 0;
  }

  /** The prompt's user message content. */
  prompt(text: string): UserModelMessage["content"] {
    return this.content(text, CREATE);
  }

  /** A follow-up's user message content, by its id (transcript rebuilds know it). */
  followup(id: string, text: string): UserModelMessage["content"] {
    return this.content(text, id);
  }

  /** A message known only by its text: the oldest undelivered follow-up with that text, if any. */
  byText(text: string): UserModelMessage["content"] {
    for (const [id, message] of this.#followups) {
      if (message === text && !this.#delivered.has(id)) return this.content(text, id);
    }
    return text;
  }

  /** Notes to write to the transcript since the last call. */
  takeNotes(): ImageNote[] {
    const notes = this.#notes;
    this.#notes = [];
    return notes;
  }

  private content(text: string, group: string): UserModelMessage["content"] {
    this.#delivered.add(group);
    const images = this.#byGroup.get(group) ?? [];
    if (images.length === 0) return text;
    if (this.#vision) {
      const parts: Array<TextPart | FilePart> = [{ type: "text", text }];
      for (const a of images)
        parts.push({ type: "file", data: a.content, mediaType: a.mimeType, filename: a.fileName });
      return parts;
    }
    const names = images.map((a) => a.fileName);
    if (!this.#noted.has(group)) {
      this.#noted.add(group);
      this.#notes.push({ group, names });
    }
    const plural = names.length === 1 ? "" : "s";
    // A part of its own, so that the message's text stays the follow-up's (history matches by it).
    return [
      { type: "text", text },
      {
        type: "text",
        text: `(The user attached ${names.length} image${plural} here: ${names.join(", ")}. ${this.#modelId} does not take images, so they are not shown to you.)`,
      },
    ];
  }
}

/** The transcript entry for a note: a warning naming the images and the model. */
export function noteEvent(note: ImageNote, modelId: string): Record<string, unknown> {
  const n = note.names.length;
  return {
    level: "warn",
    phase: "attachments",
    attachments_of: note.group,
    message: `${n} image${n === 1 ? " was" : "s were"} not shown to the model (${note.names.join(", ")}): ${modelId} does not support image input (vision_supported is false); use a model with vision to have it look at them`,
  };
}
