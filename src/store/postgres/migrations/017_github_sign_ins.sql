-- GitHub sign-in. A comment on GitHub is public, so the code it carries must be useless on its
-- own: the browser that started the sign-in holds a cookie, stored here only as its SHA-256 hash; a signed
-- webhook comment with the code approves the sign-in for its author (principal, team, role are set then);
-- only the browser with the cookie redeems it, once (used_at). The code is kept as shown: it is posted in
-- public by design and signs nobody in without the cookie.
CREATE TABLE github_sign_ins (
  browser_hash text PRIMARY KEY,
  code text COLLATE "C" NOT NULL UNIQUE,
  created_at text COLLATE "C" NOT NULL,
  expires_at text COLLATE "C" NOT NULL,
  principal_id text COLLATE "C" REFERENCES principals (id),
  team_id text COLLATE "C" REFERENCES teams (id),
  role text CHECK (role IN ('admin', 'member', 'read')),
  approved_at text COLLATE "C",
  used_at text COLLATE "C"
);

CREATE INDEX github_sign_ins_expiry ON github_sign_ins (expires_at);
