export interface RateDecision {
  allowed: boolean;
  /** Bucket size (RateLimit-Limit). */
  limit: number;
  /** Whole tokens left after this request (RateLimit-Remaining). */
  remaining: number;
  /** Seconds until the bucket is full again (RateLimit-Reset). */
  resetSeconds: number;
  /** Seconds until the tokens asked for are back, at least 1 (Retry-After), when not allowed. */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Token buckets by id: `burst` tokens, refilled at `perMinute`. Full buckets are dropped
 * when the map grows, then the oldest, so memory stays bounded by `maxIds`.
 */
export function createRateLimiter(opts: { perMinute: number; burst: number; now?: () => number; maxIds?: number }) {
  const now = opts.now ?? Date.now;
  const perMs = opts.perMinute / 60_000;
  const maxIds = opts.maxIds ?? 10_000;
  const buckets = new Map<string, Bucket>();

  const refill = (b: Bucket, t: number) => {
    b.tokens = Math.min(opts.burst, b.tokens + (t - b.at) * perMs);
    b.at = t;
  };

  const prune = (t: number) => {
    for (const [id, b] of buckets) {
      refill(b, t);
      if (b.tokens >= opts.burst) buckets.delete(id);
    }
    // Still full of active ids: forget the longest-known ones, a bounded map matters more.
    for (const id of buckets.keys()) {
      if (buckets.size < maxIds) break;
      buckets.delete(id);
    }
  };

  const decide = (b: Bucket, allowed: boolean, wanted = 1): RateDecision => ({
    allowed,
    limit: opts.burst,
    remaining: Math.max(0, Math.floor(b.tokens)),
    resetSeconds: Math.ceil((opts.burst - b.tokens) / perMs / 1000),
    // More than the bucket holds never fits: wait for a full bucket, the best there is.
    retryAfterSeconds: Math.max(1, Math.ceil((Math.min(wanted, opts.burst) - b.tokens) / perMs / 1000)),
  });

  return {
    /** Takes `count` tokens for `id` when there are that many, else none (a tRPC batch is all or nothing). */
    take(id: string, count = 1): RateDecision {
      const t = now();
      let b = buckets.get(id);
      if (!b) {
        if (buckets.size >= maxIds) prune(t);
        b = { tokens: opts.burst, at: t };
        buckets.set(id, b);
      } else refill(b, t);
      if (b.tokens < count) return decide(b, false, count);
      b.tokens -= count;
      return decide(b, true);
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    "RateLimit-Limit": String(d.limit),
    "RateLimit-Remaining": String(d.remaining),
    "RateLimit-Reset": String(d.resetSeconds),
  };
  if (!d.allowed) headers["Retry-After"] = String(d.retryAfterSeconds);
  return headers;
}
