/**
 * Usage of `dispatch schedules`, apart from its implementation (src/cli/schedules.ts) so that loading the
 * CLI does not load the client.
 */
export const SCHEDULES_USAGE = `  dispatch schedules list [--json]           the team's schedules, their cron and next run
  dispatch schedules get <id|name> [--json]
  dispatch schedules create --name N --cron "<5 fields>" [--timezone Z] (--prompt P | --skill S)
                            [--model M] [--env E] [--repo owner/repo[@base]] [--paused] [--json]
                                 cron is read in UTC unless --timezone (an IANA name); each firing
                                 creates one run, exactly once; missed fire times fire once on start
  dispatch schedules update <id|name> [--name N] [--cron C] [--timezone Z] [--prompt P] [--skill S]
                            [--model M] [--env E] [--repo R] [--json]
                                 changes what is given; an empty value ("") clears an option
  dispatch schedules pause|resume <id|name>   resume does not fire the slots missed while paused
  dispatch schedules delete <id|name>         the runs it made are kept`;
