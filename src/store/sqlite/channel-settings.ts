import type { ChannelKey, ChannelSettings } from "../store.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/** Per-channel settings of the chat integrations: a channel's default repository and default agent. */

export async function getChannelSettings(
  db: Database,
  where: ChannelKey,
): Promise<ChannelSettings | undefined> {
  const row = db
    .sql("SELECT * FROM channel_settings WHERE platform = ? AND workspace = ? AND channel = ?")
    .get(where.platform, where.workspace, where.channel) as Row | undefined;
  return row ? toSettings(row) : undefined;
}

export async function setChannelRepository(
  db: Database,
  where: ChannelKey,
  repository: { repository: string; base?: string } | null,
  by: string,
  at: string,
): Promise<ChannelSettings> {
  return db.grouped(() => {
    db.sql(
      `INSERT INTO channel_settings (platform, workspace, channel, repository, base_branch, updated_by, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (platform, workspace, channel) DO UPDATE SET
         repository = excluded.repository, base_branch = excluded.base_branch,
         updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
    ).run(
      where.platform,
      where.workspace,
      where.channel,
      repository?.repository ?? null,
      repository?.base ?? null,
      by,
      at,
    );
    const row = db
      .sql("SELECT * FROM channel_settings WHERE platform = ? AND workspace = ? AND channel = ?")
      .get(where.platform, where.workspace, where.channel) as Row;
    return toSettings(row);
  });
}

/** Sets (or with null clears) the channel's default agent, leaving its repository as it is. */
export async function setChannelAgent(
  db: Database,
  where: ChannelKey,
  agent: string | null,
  by: string,
  at: string,
): Promise<ChannelSettings> {
  return db.grouped(() => {
    db.sql(
      `INSERT INTO channel_settings (platform, workspace, channel, agent, updated_by, updated_at)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (platform, workspace, channel) DO UPDATE SET
         agent = excluded.agent, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
    ).run(where.platform, where.workspace, where.channel, agent, by, at);
    const row = db
      .sql("SELECT * FROM channel_settings WHERE platform = ? AND workspace = ? AND channel = ?")
      .get(where.platform, where.workspace, where.channel) as Row;
    return toSettings(row);
  });
}

function toSettings(row: Row): ChannelSettings {
  return {
    platform: String(row.platform) as ChannelSettings["platform"],
    workspace: String(row.workspace),
    channel: String(row.channel),
    repository: row.repository === null ? null : String(row.repository),
    baseBranch: row.base_branch === null ? null : String(row.base_branch),
    agent: row.agent === null ? null : String(row.agent),
    updatedBy: String(row.updated_by),
    updatedAt: String(row.updated_at),
  };
}
