import { validate, version } from "uuid";
import { describe, expect, it } from "vitest";
import { RandomIds } from "../../src/runs/random-ids.ts";

/** Run and session ids from one pooled random source (src/runs/random-ids.ts). */
describe("RandomIds", () => {
  it("makes distinct UUID v7s in creation order, across many refills of the pool", () => {
    const ids = new RandomIds();
    const made = Array.from({ length: 5_000 }, () => ids.uuidv7());
    for (const id of made) {
      expect(validate(id)).toBe(true);
      expect(version(id)).toBe(7);
    }
    expect(new Set(made).size).toBe(made.length);
    // Many in the same millisecond: still ordered as made (lists break ties of created_at by id).
    expect([...made].sort()).toEqual(made);
    // The timestamp is now's.
    const msecs = Number.parseInt(made.at(-1)!.replaceAll("-", "").slice(0, 12), 16);
    expect(Math.abs(msecs - Date.now())).toBeLessThan(60_000);
  });

  it("makes session ids of the asked length that do not repeat", () => {
    const ids = new RandomIds();
    const tokens = Array.from({ length: 2_000 }, () => ids.token(24));
    for (const token of tokens) expect(Buffer.from(token, "base64url")).toHaveLength(24);
    expect(new Set(tokens).size).toBe(tokens.length);
  });
});
