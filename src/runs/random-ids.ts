import { randomFillSync } from "node:crypto";
import { v7 as uuidv7 } from "uuid";

/** Bytes drawn from the system's generator at a time: 256 run ids and session ids between two draws. */
const POOL_BYTES = 10_240;

/**
 * Run ids (UUID v7) and session ids from one pool of cryptographically strong random bytes, refilled
 * with one `randomFillSync` when used up. uuid's own `v7()` and `randomBytes(24)` each asked the
 * generator separately — two calls into OpenSSL per create, where the pool makes one per 256 creates.
 * Every byte is handed out once.
 *
 * The ids stay in creation order within this process as uuid's `v7()` keeps them: the same millisecond
 * (and random sequence start) rule, the sequence counted up within a millisecond (RFC 9562, method 1).
 */
export class RandomIds {
  private readonly pool = Buffer.allocUnsafe(POOL_BYTES);
  private offset = POOL_BYTES;
  private msecs = Number.NEGATIVE_INFINITY;
  private seq = 0;

  /** A UUID v7, later than every one this generator made before. */
  uuidv7(): string {
    const random = this.take(16);
    const now = Date.now();
    if (now > this.msecs) {
      this.msecs = now;
      // uuid's v7Sequence: 31 random bits to start the millisecond's counter at.
      this.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
    } else {
      this.seq = (this.seq + 1) | 0;
      if (this.seq === 0) this.msecs += 1;
    }
    return uuidv7({ random, msecs: this.msecs, seq: this.seq });
  }

  /** `bytes` random bytes as base64url (a session id). */
  token(bytes: number): string {
    return this.take(bytes).toString("base64url");
  }

  private take(bytes: number): Buffer {
    if (this.offset + bytes > POOL_BYTES) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    const slice = this.pool.subarray(this.offset, this.offset + bytes);
    this.offset += bytes;
    return slice;
  }
}
