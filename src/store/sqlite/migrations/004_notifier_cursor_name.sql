-- The notifier's read position (notifier_cursors, 003) was named 'slack' while Slack was the only platform
-- it served; it is 'notifier' now. The row is carried over so that an upgraded install does not re-read
-- every run. Where a 'notifier' row exists already, it was written under the new name and is kept
-- (UPDATE OR IGNORE skips the rename instead of failing on the primary key); the 'slack' row goes either
-- way. Running this again changes nothing.
UPDATE OR IGNORE notifier_cursors SET name = 'notifier' WHERE name = 'slack';
DELETE FROM notifier_cursors WHERE name = 'slack';
