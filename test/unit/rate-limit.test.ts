import { describe, expect, spyOn, test } from "bun:test";
import { createRateLimiter, rateLimitHeaders } from "../../src/api/rate-limit";
import { manualClock } from "./helpers";

/** `burst` tokens refilled at `perMinute`, on a clock the test moves. */
function limiter(perMinute: number, burst: number, maxIds?: number) {
  const clock = manualClock(1_000_000);
  return { clock, rl: createRateLimiter({ perMinute, burst, now: clock.now, maxIds }) };
}

describe("a burst is allowed, then requests are refused", () => {
  test("burst tokens at once, the next one refused", () => {
    const { rl } = limiter(60, 5);
    const decisions = Array.from({ length: 7 }, () => rl.take("k"));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false]);
  });

  test("each id has its own bucket", () => {
    const { rl } = limiter(60, 2);
    rl.take("a");
    rl.take("a");
    expect(rl.take("a").allowed).toBe(false);
    expect(rl.take("b").allowed).toBe(true);
  });

  test("a refused request takes no token", () => {
    const { rl, clock } = limiter(60, 1);
    rl.take("k");
    for (let i = 0; i < 10; i++) expect(rl.take("k").allowed).toBe(false);
    clock.t += 1000;
    expect(rl.take("k").allowed).toBe(true);
  });
});

describe("tokens refill over time", () => {
  test("one token comes back after 60000/perMinute ms", () => {
    const { rl, clock } = limiter(60, 3); // one a second
    for (let i = 0; i < 3; i++) rl.take("k");
    clock.t += 999;
    expect(rl.take("k").allowed).toBe(false);
    clock.t += 1;
    expect(rl.take("k").allowed).toBe(true);
    expect(rl.take("k").allowed).toBe(false);
  });

  test("refill stops at the burst size", () => {
    const { rl, clock } = limiter(60, 3);
    rl.take("k");
    clock.t += 60 * 60_000;
    const decisions = Array.from({ length: 4 }, () => rl.take("k"));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
  });

  test("take(id, n) takes n tokens, or none when fewer are left (a tRPC batch)", () => {
    const { rl, clock } = limiter(60, 5); // one a second
    expect(rl.take("k", 3)).toMatchObject({ allowed: true, remaining: 2 });
    const refused = rl.take("k", 3);
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(2);
    expect(refused.retryAfterSeconds).toBe(1);
    expect(rl.take("k", 2)).toMatchObject({ allowed: true, remaining: 0 });
    // More than the bucket holds never fits; Retry-After is the time to a full bucket.
    expect(rl.take("k", 50)).toMatchObject({ allowed: false, retryAfterSeconds: 5 });
    clock.t += 5000;
    expect(rl.take("k", 5).allowed).toBe(true);
  });
});

describe("the decision carries the header values", () => {
  test("limit, remaining and reset while allowed", () => {
    const { rl } = limiter(60, 5);
    expect(rl.take("k")).toMatchObject({ allowed: true, limit: 5, remaining: 4, resetSeconds: 1 });
    rl.take("k");
    rl.take("k");
    rl.take("k");
    expect(rl.take("k")).toMatchObject({ allowed: true, limit: 5, remaining: 0, resetSeconds: 5 });
  });

  test("remaining counts whole tokens only", () => {
    const { rl, clock } = limiter(60, 5);
    for (let i = 0; i < 5; i++) rl.take("k");
    clock.t += 1500; // 1.5 tokens back
    expect(rl.take("k")).toMatchObject({ allowed: true, remaining: 0 });
  });

  test("retryAfterSeconds is the wait for one token", () => {
    const { rl, clock } = limiter(6, 1); // one token every 10 s
    rl.take("k");
    expect(rl.take("k")).toMatchObject({ allowed: false, retryAfterSeconds: 10, remaining: 0, resetSeconds: 10 });
    clock.t += 4_000;
    expect(rl.take("k").retryAfterSeconds).toBe(6);
    clock.t += 5_500;
    expect(rl.take("k").retryAfterSeconds).toBe(1); // 0.5 s rounds up
  });

  test("retryAfterSeconds is at least 1 even when a token is milliseconds away", () => {
    const { rl } = limiter(6000, 1); // one token every 10 ms
    rl.take("k");
    const refused = rl.take("k");
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBe(1);
    expect(Number.isInteger(refused.retryAfterSeconds)).toBe(true);
  });
});

describe("rateLimitHeaders", () => {
  test("allowed: RateLimit-* and no Retry-After", () => {
    const { rl } = limiter(60, 5);
    expect(rateLimitHeaders(rl.take("k"))).toEqual({ "RateLimit-Limit": "5", "RateLimit-Remaining": "4", "RateLimit-Reset": "1" });
  });

  test("refused: Retry-After in whole seconds as well", () => {
    const { rl } = limiter(6, 1);
    rl.take("k");
    expect(rateLimitHeaders(rl.take("k"))).toEqual({
      "RateLimit-Limit": "1",
      "RateLimit-Remaining": "0",
      "RateLimit-Reset": "10",
      "Retry-After": "10",
    });
  });
});

describe("the bucket map stays bounded", () => {
  test("when maxIds is reached, full buckets are dropped", () => {
    const { rl, clock } = limiter(60, 2, 3);
    rl.take("a");
    rl.take("b");
    rl.take("c");
    clock.t += 60_000; // a, b and c are full again
    // Map#delete is the only way a bucket leaves; the limiter exposes no size.
    const deletes = spyOn(Map.prototype, "delete");
    try {
      rl.take("d");
      expect(deletes.mock.calls.map((c) => c[0]).sort()).toEqual(["a", "b", "c"]);
    } finally {
      deletes.mockRestore();
    }
    expect(rl.take("d").allowed).toBe(true);
    expect(rl.take("d").allowed).toBe(false);
  });

  test("below maxIds nothing is dropped", () => {
    const { rl, clock } = limiter(60, 2, 10);
    rl.take("a");
    clock.t += 60_000;
    const deletes = spyOn(Map.prototype, "delete");
    try {
      rl.take("b");
      expect(deletes).not.toHaveBeenCalled();
    } finally {
      deletes.mockRestore();
    }
  });

  test("buckets that are not full survive pruning while there is room", () => {
    const { rl } = limiter(60, 2, 3);
    rl.take("victim");
    rl.take("victim");
    rl.take("other");
    expect(rl.take("new").allowed).toBe(true);
    expect(rl.take("victim").allowed).toBe(false);
  });

  test("a flood of active ids cannot grow the map: the oldest are forgotten", () => {
    const { rl } = limiter(60, 2, 3);
    const deletes = spyOn(Map.prototype, "delete");
    try {
      for (let i = 0; i < 50; i++) rl.take(`flood-${i}`);
      // Every id past the third pushes one out: the map never holds more than maxIds.
      expect(deletes.mock.calls.length).toBe(47);
      expect(deletes.mock.calls[0]?.[0]).toBe("flood-0");
    } finally {
      deletes.mockRestore();
    }
  });
});
