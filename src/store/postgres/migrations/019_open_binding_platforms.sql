-- A thread binding's platform is whichever surface registered it (a surface is a folder; Slack and GitHub
-- are two of them), not a fixed list.
ALTER TABLE thread_bindings DROP CONSTRAINT IF EXISTS thread_bindings_platform_check;
