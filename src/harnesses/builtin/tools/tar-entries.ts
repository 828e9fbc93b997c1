const BLOCK = 512;

/**
 * Reads a GNU tar stream as it arrives and calls `visit` with each regular file's name and content (other
 * entries are skipped; names longer than 100 bytes come from GNU long-name records). `push` returns false
 * once `visit` has returned false, or the archive has ended. Entries over `maxEntryBytes` are skipped
 * without being held in memory.
 */
export function parseTar(
  visit: (name: string, data: Buffer) => boolean,
  maxEntryBytes = Number.POSITIVE_INFINITY,
) {
  let pending: Buffer = Buffer.alloc(0);
  let longName: string | undefined;
  /** The entry whose data is being read: bytes left (with padding) and what to do with them. */
  let entry: { name: string; type: string; size: number; left: number; chunks: Buffer[] } | undefined;
  let done = false;

  const finishEntry = (e: NonNullable<typeof entry>): boolean => {
    const data = Buffer.concat(e.chunks).subarray(0, e.size);
    if (e.type === "L") {
      longName = data.toString("utf8").replace(/\0.*$/s, "");
      return true;
    }
    const name = longName ?? e.name;
    longName = undefined;
    if ((e.type === "0" || e.type === "\0") && e.size <= maxEntryBytes) return visit(name, data);
    return true;
  };

  const push = (chunk: Buffer): boolean => {
    if (done) return false;
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    for (;;) {
      if (entry) {
        const take = Math.min(entry.left, pending.length);
        const keep = entry.type === "L" || entry.size <= maxEntryBytes;
        if (keep) entry.chunks.push(pending.subarray(0, take));
        pending = pending.subarray(take);
        entry.left -= take;
        if (entry.left > 0) return true;
        const finished = entry;
        entry = undefined;
        if (!finishEntry(finished)) {
          done = true;
          return false;
        }
        continue;
      }
      if (pending.length < BLOCK) return true;
      const header = pending.subarray(0, BLOCK);
      pending = pending.subarray(BLOCK);
      if (header.every((b) => b === 0)) {
        done = true;
        return false;
      }
      const size = headerSize(header.subarray(124, 136));
      entry = {
        name: cString(header.subarray(0, 100)),
        type: String.fromCharCode(header[156]!),
        size,
        left: Math.ceil(size / BLOCK) * BLOCK,
        chunks: [],
      };
    }
  };
  return { push };
}

function cString(field: Buffer): string {
  const end = field.indexOf(0);
  return field.subarray(0, end === -1 ? field.length : end).toString("utf8");
}

/** Octal digits, or GNU's base-256 (high bit set) for sizes octal cannot hold. */
function headerSize(field: Buffer): number {
  if (field[0]! & 0x80) {
    let n = field[0]! & 0x7f;
    for (const b of field.subarray(1)) n = n * 256 + b;
    return n;
  }
  return Number.parseInt(cString(field).trim() || "0", 8);
}
