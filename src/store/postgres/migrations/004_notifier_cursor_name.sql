-- SQLite's 004 renamed the notifier's read position from 'slack' to 'notifier'. A PostgreSQL database
-- never had the old name, but the numbers of both backends stay in step; running this changes nothing
-- unless a 'slack' row was written by hand, which is then carried over as on SQLite.
UPDATE notifier_cursors SET name = 'notifier'
 WHERE name = 'slack' AND NOT EXISTS (SELECT 1 FROM notifier_cursors WHERE name = 'notifier');
DELETE FROM notifier_cursors WHERE name = 'slack';
