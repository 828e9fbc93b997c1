-- Runs that wait for a person (docs/architecture.md, "Waiting for a person"): the state BLOCKED, since
-- blocked_at, ended by the timeout (DISPATCH_BLOCKED_TIMEOUT_S) when nobody answers; the index finds those.
ALTER TABLE runs ADD COLUMN blocked_at TEXT;
CREATE INDEX runs_blocked ON runs (blocked_at) WHERE state = 'BLOCKED';
-- SQLite cannot change a CHECK constraint in place. Its documented way to relax one
-- (sqlite.org/lang_altertable.html, "making other kinds of table schema changes") edits the table's
-- schema text; the migration runner lifts SQLite's defensive mode for a file that does so and bumps
-- schema_version after it (so this comes last). Every stored row already satisfies the wider constraint.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, '''INPROGRESS'', ''SUCCEEDED''', '''INPROGRESS'', ''BLOCKED'', ''SUCCEEDED''')
 WHERE type = 'table' AND name = 'runs';
PRAGMA writable_schema = OFF;
