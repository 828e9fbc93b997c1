export { Notifier, type NotifierOptions } from "./notifier.ts";
export type { NotifierPlatform } from "./platform.ts";

/** The service account the notifier reads runs as (the default team, like the Slack and GitHub apps). */
export const NOTIFIER_PRINCIPAL = { id: "notifier", displayName: "Notifier" };
