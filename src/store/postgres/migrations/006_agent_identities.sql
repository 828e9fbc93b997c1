-- Agent identities are the team's service-account principals: what Oz lets a team describe about them
-- (description, base prompt, base model, skills), and when one was deleted. A deleted identity keeps
-- its row because runs and revoked keys still name it.
ALTER TABLE principals ADD COLUMN description text;
ALTER TABLE principals ADD COLUMN prompt text;
ALTER TABLE principals ADD COLUMN base_model text;
ALTER TABLE principals ADD COLUMN skills text NOT NULL DEFAULT '[]';
ALTER TABLE principals ADD COLUMN deleted_at text COLLATE "C";

CREATE INDEX principals_team ON principals (team_id, type, created_at, id);
