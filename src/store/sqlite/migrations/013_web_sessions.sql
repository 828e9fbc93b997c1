-- Web sign-in (docs/surfaces.md). A login link is a one-time token that signs a principal in once, within
-- minutes; a web session is a browser's cookie, with the CSRF token its forms must carry. Tokens and
-- session ids are stored only as SHA-256 hashes. A session opened with an API key names that key, so
-- revoking the key ends the session too; one opened from a link names the link, which makes it the
-- only session that link can ever open.
CREATE TABLE login_links (
  token_hash TEXT PRIMARY KEY,
  principal_id TEXT NOT NULL REFERENCES principals (id),
  team_id TEXT NOT NULL REFERENCES teams (id),
  role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'read')),
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);

CREATE INDEX login_links_expiry ON login_links (expires_at);

CREATE TABLE web_sessions (
  id_hash TEXT PRIMARY KEY,
  principal_id TEXT NOT NULL REFERENCES principals (id),
  team_id TEXT NOT NULL REFERENCES teams (id),
  role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'read')),
  csrf_token TEXT NOT NULL,
  login_link_hash TEXT UNIQUE REFERENCES login_links (token_hash) ON DELETE SET NULL,
  api_key_id TEXT REFERENCES api_keys (id),
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT
);

CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);
