/**
 * Names and usage of the run commands, apart from their implementation (src/cli/runs.ts) so that
 * `dispatch serve` does not load the client and the run commands load only what they use.
 */
export const RUN_COMMANDS = [
  "run",
  "list",
  "get",
  "followup",
  "cancel",
  "logs",
  "diff",
  "approve",
  "revise",
  "budget",
] as const;
export type RunCommand = (typeof RUN_COMMANDS)[number];

export const RUNS_USAGE = `  dispatch run <prompt> [--follow] [--json] [--title T] [--name N] [--model M] [--env E] [--skill S]
               [--repo owner/repo[@base]] [--plan]
                                 create a run ("-" reads the prompt from standard input); --repo has
                                 its changes pushed to a dispatch/ branch with a pull request; --plan
                                 has the agent write a plan and wait for your approval first
  dispatch list [--state S]... [--name N] [--limit N] [--json]
  dispatch get <run id> [--json]  the run, with its repository, branch, pull request and diff stat
  dispatch followup <run id> <message> [--json]
  dispatch cancel <run id>
  dispatch logs <run id> [--follow] [--json]
  dispatch diff <run id>         print the run's latest patch (for git apply)
  dispatch approve <run id> [--note N] [--json]
                                 carry out the plan a run waits with (BLOCKED awaiting_approval)
  dispatch revise <run id> <changes> [--json]
                                 have the plan revised; it waits for you again
  dispatch budget <run id> extend <usd> | stop [--json]
                                 a run waiting for budget (BLOCKED awaiting_budget) may spend that
                                 many US dollars more and continues, or delivers what it has

  They call the API at DISPATCH_BASE_URL (default http://127.0.0.1:8080) with DISPATCH_API_KEY
  (or DISPATCH_ADMIN_API_KEY). --follow streams the transcript until the run finishes and exits
  0 if it SUCCEEDED, 1 if not; it stops with 3 when the run waits for you (BLOCKED).`;

export function isRunCommand(command: string | undefined): command is RunCommand {
  return (RUN_COMMANDS as readonly string[]).includes(command ?? "");
}
