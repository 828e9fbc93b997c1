/**
 * Names and usage of the catalogue and identity commands, apart from their implementation
 * (src/cli/catalog.ts, src/cli/identities.ts) so that loading the CLI does not load the client.
 */
/** The read-only listings; `identities` has subcommands of its own. */
export const CATALOG_COMMANDS = ["models", "environments", "agents"] as const;
export type CatalogCommand = (typeof CATALOG_COMMANDS)[number];

export const CATALOG_USAGE = `  dispatch models [--json]        the models runs can name, and the default
  dispatch environments [--json]  the configured environments and their latest run
  dispatch agents [--repo owner/repo] [--json]
                                 the skills runs can use, by name
  dispatch identities list [--json]           the team's service accounts (admin key)
  dispatch identities create <name> [--description D] [--prompt P] [--model M] [--skill S]... [--json]
  dispatch identities get <uid> [--json]
  dispatch identities update <uid> [--name N] [--description D] [--prompt P] [--model M] [--skill S]... [--json]
                                 an empty value ("") clears a field
  dispatch identities delete <uid>            also revokes its API keys`;

export function isCatalogCommand(command: string | undefined): command is CatalogCommand {
  return (CATALOG_COMMANDS as readonly string[]).includes(command ?? "");
}
