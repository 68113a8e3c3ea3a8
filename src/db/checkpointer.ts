import type { Logger } from "../log";
import type { Db } from "./client";

const EVERY_MS = 1000;
/** SQLite's own default, back in force whenever the thread is not running. */
const AUTO_CHECKPOINT_PAGES = 1000;

/**
 * Moves the WAL into the database file on a thread of its own. SQLite's automatic
 * checkpoint runs inside whichever commit crosses 1000 pages, and its fsync then
 * stalls that request and every one behind it (a few ms every second under write
 * load: bench/results.md). Until the thread is ready, and if it fails, the automatic
 * checkpoint stays on.
 */
export function startCheckpointer(db: Db, path: string, log: Logger): { stop(): void } {
  if (path === ":memory:") return { stop() {} };
  const worker = new Worker(new URL("./checkpoint-worker.ts", import.meta.url));
  const fallBack = (why: string) => {
    db.$client.run(`PRAGMA wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
    log.warn("checkpoint thread failed; SQLite checkpoints in line again", { error: why });
  };
  worker.onmessage = (event: MessageEvent<{ ready?: boolean; error?: string }>) => {
    if (event.data.ready) db.$client.run("PRAGMA wal_autocheckpoint = 0");
    else if (event.data.error) log.warn("checkpoint failed; will retry", { error: event.data.error });
  };
  worker.onerror = (event) => {
    fallBack(event.message);
    worker.terminate();
  };
  worker.postMessage({ path, everyMs: EVERY_MS });
  return {
    stop() {
      worker.terminate();
      db.$client.run(`PRAGMA wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
    },
  };
}
