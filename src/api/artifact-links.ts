import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** How long a download link of an artifact stays valid. */
export const DOWNLOAD_LINK_TTL_MS = 15 * 60_000;

/** The generated key's file in the data directory (when DISPATCH_SIGNING_KEY is not set). */
export const SIGNING_KEY_FILE = "signing-key";

const MIN_KEY_CHARS = 32;

/**
 * The key that signs download links: DISPATCH_SIGNING_KEY when set, else a random key generated on the
 * first start and kept in `<dataDir>/signing-key` (mode 0600), so links handed out stay valid across
 * restarts and every process sharing the data directory signs alike.
 */
export async function loadSigningKey(configured: string | undefined, dataDir: string): Promise<Buffer> {
  if (configured) return Buffer.from(configured, "utf8");
  const path = join(dataDir, SIGNING_KEY_FILE);
  await mkdir(dataDir, { recursive: true });
  try {
    await writeFile(path, `${randomBytes(32).toString("base64url")}\n`, { flag: "wx", mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  // A key file someone made readable to others is tightened, never trusted as it is.
  if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600);
  const key = (await readFile(path, "utf8")).trim();
  if (key.length < MIN_KEY_CHARS) {
    throw new Error(
      `${path} holds a signing key shorter than ${MIN_KEY_CHARS} characters; delete it to have a new one generated`,
    );
  }
  return Buffer.from(key, "utf8");
}

export interface SignedLink {
  url: string;
  /** RFC 3339, when the link stops working. */
  expiresAt: string;
}

export type LinkCheck = "valid" | "expired" | "invalid";

/**
 * Signed, expiring download links of FILE artifacts: `/api/v1/agent/artifacts/{uid}/content?team=…&
 * expires=…&signature=…`, the signature an HMAC-SHA256 of the team, the uid and the expiry (Unix
 * seconds). The link is all a downloader needs: no API key.
 *
 * Run attachments and run transcripts get links of the same kind from an instance with `kind: "attachment"`
 * or `"transcript"` (and their own path): the kind is part of what is signed, so a link to one kind never
 * opens another.
 */
export class ArtifactLinks {
  readonly #key: Buffer;
  readonly #ttlMs: number;
  readonly #kind: string;
  readonly #path: (uid: string) => string;

  constructor(
    key: Buffer,
    opts: {
      ttlMs?: number;
      kind?: "artifact" | "attachment" | "transcript";
      path?: (uid: string) => string;
    } = {},
  ) {
    this.#key = key;
    this.#ttlMs = opts.ttlMs ?? DOWNLOAD_LINK_TTL_MS;
    this.#kind = opts.kind ?? "artifact";
    this.#path = opts.path ?? contentPath;
  }

  sign(baseUrl: string, teamId: string, uid: string, now = Date.now()): SignedLink {
    const expires = Math.floor((now + this.#ttlMs) / 1000);
    const query = new URLSearchParams({
      team: teamId,
      expires: String(expires),
      signature: this.signature(teamId, uid, expires),
    });
    return {
      url: `${baseUrl}${this.#path(uid)}?${query}`,
      expiresAt: new Date(expires * 1000).toISOString(),
    };
  }

  /** Whether a link's parameters are genuine and still valid; "invalid" for anything altered. */
  check(teamId: string, uid: string, expires: string, signature: string, now = Date.now()): LinkCheck {
    if (!/^\d{1,12}$/.test(expires) || !/^[A-Za-z0-9_-]{43}$/.test(signature)) return "invalid";
    const expected = Buffer.from(this.signature(teamId, uid, Number(expires)), "utf8");
    const given = Buffer.from(signature, "utf8");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "invalid";
    return Number(expires) * 1000 <= now ? "expired" : "valid";
  }

  private signature(teamId: string, uid: string, expires: number): string {
    return createHmac("sha256", this.#key)
      .update(`dispatch-${this.#kind}-v1\n${teamId}\n${uid}\n${expires}`)
      .digest("base64url");
  }
}

/** Where a FILE artifact's bytes are served (with a signed query). */
export function contentPath(uid: string): string {
  return `/api/v1/agent/artifacts/${encodeURIComponent(uid)}/content`;
}
