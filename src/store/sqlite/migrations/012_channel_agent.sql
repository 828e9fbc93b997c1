-- A chat channel's default agent: the harness runs started there use unless the command names
-- one (`/agent --agent claude …`). Its registry key (builtin, scripted, claude, codex, gemini); NULL when
-- the channel has none and runs get the server's default.
ALTER TABLE channel_settings ADD COLUMN agent TEXT;
