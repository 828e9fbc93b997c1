/**
 * Usage of `dispatch webhooks`, apart from its implementation (src/cli/webhooks.ts) so that loading the
 * CLI does not load the client.
 */
export const WEBHOOKS_USAGE = `  dispatch webhooks list [--json]            the team's webhooks (admin key)
  dispatch webhooks create <url> [--event T]... [--description D] [--json]
                                 sends the team's run events to <url>, signed (Standard Webhooks);
                                 prints the id and the secret, shown only this once. Events:
                                 run.created, run.state_changed, run.followup, run.delivered (default all)
  dispatch webhooks get <id> [--json]
  dispatch webhooks delete <id>              nothing more is sent to it
  dispatch webhooks deliveries <id> [--limit N] [--cursor C] [--json]
                                 newest first: state, attempts, the receiver's last answer
  dispatch webhooks redeliver <id> <delivery-id>
                                 sends a delivery again with fresh attempts (the same webhook-id)`;
