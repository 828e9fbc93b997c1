export { Notifier, type NotifierOptions } from "./notifier.ts";
export type { NotifierPlatform } from "./platform.ts";

/** The service account the notifier reads runs as (the default team, like the surfaces' own service accounts). */
export const NOTIFIER_PRINCIPAL = { id: "notifier", displayName: "Notifier" };
