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

function backoffMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.min(failures - 1, 20));
}
