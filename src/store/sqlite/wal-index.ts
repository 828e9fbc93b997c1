import { closeSync, openSync, readSync } from "node:fs";
import { endianness } from "node:os";

/** Bytes read from the start of the wal-index: two copies of its header, then the checkpoint's record. */
const HEADER_BYTES = 100;
/** Offsets in the wal-index (https://www.sqlite.org/walformat.html, "The WAL-Index Format"). */
const IS_INIT = 12;
const MX_FRAME = 16;
const N_BACKFILL = 96;

/**
 * How many pages of the write-ahead log are not yet copied into the database file, read from the
 * wal-index (the database's "-shm" file, which every connection maps and SQLite keeps current): one pread
 * per look, where asking SQLite (`PRAGMA wal_checkpoint`) would checkpoint. The integers are in the
 * machine's byte order. A read may race a writer; it only decides when to checkpoint, so an approximate
 * count is enough.
 */
export class WalIndex {
  private readonly path: string;
  private fd: number | undefined;
  private readonly header = Buffer.alloc(HEADER_BYTES);
  private readonly littleEndian = endianness() === "LE";

  constructor(databasePath: string) {
    this.path = `${databasePath}-shm`;
  }

  /** Frames appended to the log since its last restart that no checkpoint has copied yet; 0 if unknown. */
  uncheckpointedPages(): number {
    try {
      this.fd ??= openSync(this.path, "r");
      if (readSync(this.fd, this.header, 0, HEADER_BYTES, 0) < HEADER_BYTES) return 0;
    } catch {
      return 0; // no wal-index yet (nothing written), or the store is being closed
    }
    if (this.header[IS_INIT] !== 1) return 0;
    const read = (offset: number) =>
      this.littleEndian ? this.header.readUInt32LE(offset) : this.header.readUInt32BE(offset);
    return Math.max(0, read(MX_FRAME) - read(N_BACKFILL));
  }

  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}
