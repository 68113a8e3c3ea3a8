import { errorText, type Logger } from "./log";

/** Waits after a failure: doubling from the first wait, at most MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 60_000;

export interface Repeating {
  stop(): void;
}

/**
 * Runs `task` now and then every `everyMs`. A failure (a busy database, say) is logged and
 * the task tried again sooner, backing off up to the usual interval: background work never
 * throws out of a timer, so it never ends the process (docs/operations.md).
 */
export function repeatEvery(what: string, everyMs: number, task: () => unknown, log: Logger): Repeating {
  let timer: Timer | undefined;
  let stopped = false;
  let failures = 0;
  const tick = async () => {
    try {
      await task();
      failures = 0;
    } catch (err) {
      failures++;
      log.warn(`${what} failed; will retry`, { error: errorText(err), failures });
    }
    if (stopped) return;
    const wait = failures === 0 ? everyMs : Math.min(everyMs, backoffMs(failures));
    timer = setTimeout(tick, wait);
  };
  void tick();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * Calls `task` until it succeeds, backing off between tries, and never throws: for a write
 * that must land eventually (a send's status once the network took it). `afterFailure`:
 * the caller's own try just failed, so wait before the first one. Returns whether it
 * succeeded within `giveUpAfterMs` (default: keep trying for good).
 */
export async function keepTrying(
  what: string,
  task: () => unknown,
  log: Logger,
  opts: { afterFailure?: boolean; giveUpAfterMs?: number } = {},
): Promise<boolean> {
  const deadline = Date.now() + (opts.giveUpAfterMs ?? Infinity);
  for (let failures = opts.afterFailure ? 1 : 0; ; failures++) {
    if (failures > 0) {
      const wait = backoffMs(failures);
      if (Date.now() + wait > deadline) {
        log.error(`${what} failed; giving up`, { tries: failures });
        return false;
      }
      await Bun.sleep(wait);
    }
    try {
      await task();
      if (failures > 0) log.info(`${what} succeeded after retrying`, { tries: failures + 1 });
      return true;
    } catch (err) {
      log.warn(`${what} failed; will retry`, { error: errorText(err), tries: failures + 1 });
    }
  }
}

/**
 * Runs a write now; when it fails, logs it and keeps trying in the background (keepTrying).
 * Resolves to whether it was written now. For writes whose caller must answer anyway.
 */
export async function writeOrRetry(what: string, write: () => unknown, log: Logger): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (err) {
    log.warn(`${what} failed; will retry`, { error: errorText(err) });
    void keepTrying(what, write, log, { afterFailure: true });
    return false;
  }
}

/** The wait after `failures` failures in a row: doubling from 250 ms, at most a minute. */
export function backoffMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.min(failures - 1, 20));
}

export interface ClaimLoop {
  /** Stops claiming and waits for work in flight, at most `graceMs`; resolves to how many were still in flight. */
  stop(graceMs: number): Promise<number>;
}

/**
 * Works off a queue in the database until stopped (webhook deliveries, scheduled messages):
 * claims up to the room left under `maxInFlight`, works on each claimed item concurrently,
 * and claims again at once while claims bring something; when one brings nothing it waits
 * `idleMs`, cut short when an item's work ends (it may make room a claim needs). A failed
 * claim (a busy or unreachable database) is logged and retried with backoff, at most
 * `maxBackoffMs` later; a failed item is logged. Nothing is thrown: it never ends the process.
 */
export function startClaimLoop<T>(opts: {
  /** What is claimed, for the log: "webhook deliveries". */
  what: string;
  log: Logger;
  maxInFlight: number;
  idleMs: number;
  maxBackoffMs: number;
  claim(room: number): Promise<T[]>;
  work(item: T): Promise<void>;
  /** Log fields naming an item whose work failed unexpectedly. */
  describe(item: T): Record<string, unknown>;
}): ClaimLoop {
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  let workEnded = false;
  let wake: (() => void) | undefined;

  /** Waits `ms`, cut short by stop() and, when `untilWorkEnds`, by an item's work ending. */
  const rest = (ms: number, untilWorkEnds: boolean) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = () => {
        if (stopped || (untilWorkEnds && workEnded)) done();
      };
      wake();
    });

  const start = (item: T) => {
    const working = opts
      .work(item)
      .catch((err) => opts.log.error(`${opts.what}: work failed unexpectedly`, { ...opts.describe(item), error: errorText(err) }))
      .finally(() => {
        inFlight.delete(working);
        workEnded = true;
        wake?.();
      });
    inFlight.add(working);
  };

  const loop = (async () => {
    let failures = 0;
    while (!stopped) {
      // Reset before claiming: work ending during the claim makes room for the next one.
      workEnded = false;
      const room = opts.maxInFlight - inFlight.size;
      if (room === 0) {
        await rest(opts.idleMs, true);
        continue;
      }
      let claimed: T[];
      try {
        claimed = await opts.claim(room);
        failures = 0;
      } catch (err) {
        failures++;
        opts.log.warn(`claiming ${opts.what} failed; will retry`, { error: errorText(err), failures });
        await rest(Math.min(backoffMs(failures), opts.maxBackoffMs), false);
        continue;
      }
      for (const item of claimed) start(item);
      if (claimed.length === 0) await rest(opts.idleMs, true);
    }
  })();

  return {
    async stop(graceMs) {
      stopped = true;
      wake?.();
      let timer: Timer | undefined;
      const drained = (async () => {
        await loop;
        while (inFlight.size > 0) await Promise.all(inFlight);
        return true;
      })();
      const finished = await Promise.race([drained, new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
      clearTimeout(timer);
      return finished ? 0 : inFlight.size;
    },
  };
}
