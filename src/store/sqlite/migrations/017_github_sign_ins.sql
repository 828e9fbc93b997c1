-- GitHub sign-in. A comment on GitHub is public, so the code it carries must be useless on its
-- own: the browser that started the sign-in holds a cookie, stored here only as its SHA-256 hash; a signed
-- webhook comment with the code approves the sign-in for its author (principal, team, role are set then);
-- only the browser with the cookie redeems it, once (used_at). The code is kept as shown: it is posted in
-- public by design and signs nobody in without the cookie.
CREATE TABLE github_sign_ins (
  browser_hash TEXT PRIMARY KEY,
  code TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  principal_id TEXT REFERENCES principals (id),
  team_id TEXT REFERENCES teams (id),
  role TEXT CHECK (role IN ('admin', 'member', 'read')),
  approved_at TEXT,
  used_at TEXT
);

CREATE INDEX github_sign_ins_expiry ON github_sign_ins (expires_at);
