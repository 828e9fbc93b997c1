export { inProcessChannelSchedules } from "./channel-schedules.ts";
export { SlackIntegration } from "./slack-integration.ts";

/** The service account the Slack app acts as; runs carry the Slack user as their creator. */
export const SLACK_PRINCIPAL = { id: "slack-bot", displayName: "Slack app" };
