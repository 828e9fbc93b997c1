import { describe, expect, it } from "vitest";
import { addressKey } from "../../src/api/client-address.ts";
import { RateLimiter } from "../../src/api/rate-limit.ts";

describe("clients, for limits per address", () => {
  it("are IPv4 addresses as they are, and IPv6 addresses by their /64", () => {
    expect(addressKey("203.0.113.7")).toBe("203.0.113.7");
    expect(addressKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
    // Every address of one /64, however written, is one client; the next /64 is another.
    expect(addressKey("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8:1:2:0:0:0:1%eth0")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("64:ff9b::203.0.113.7")).toBe("64:ff9b:0:0::/64");
  });
});

describe("RateLimiter over a bounded table of clients", () => {
  it("lets new clients share one bucket while the table is full of active ones, and forgets idle ones", () => {
    const limiter = new RateLimiter(60, 2, 3);
    const t0 = 1_000_000;
    for (const client of ["a", "b", "c"]) expect(limiter.take(client, t0)).toBe(0);
    // Full: d and e share the overflow bucket (burst 2), and a keeps its own, half-spent one.
    expect(limiter.take("d", t0)).toBe(0);
    expect(limiter.take("e", t0)).toBe(0);
    expect(limiter.take("f", t0)).toBeGreaterThan(0);
    expect(limiter.take("a", t0)).toBe(0);
    expect(limiter.take("a", t0)).toBeGreaterThan(0);
    // A minute later everyone has refilled: the idle are forgotten and a new client has a bucket of its own.
    expect(limiter.take("g", t0 + 60_000)).toBe(0);
    expect(limiter.take("g", t0 + 60_000)).toBe(0);
    expect(limiter.take("g", t0 + 60_000)).toBeGreaterThan(0);
  });
});
