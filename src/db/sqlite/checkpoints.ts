import type { Database } from "bun:sqlite";
import type { Gate } from "./gate";

/** How often the checkpointer copies the WAL into the database file. */
const CHECKPOINT_EVERY_MS = 100;
/** WAL frames (4 KiB pages) past which the serving connection lets the WAL restart: about 40 MiB. */
const RESTART_AFTER_FRAMES = 10_000;
/** How long closing waits for the checkpointer's pass to end. */
const STOP_WAIT_MS = 2_000;

export interface Checkpoints {
  /** Ends the checkpointer after its current pass, its connection closed. */
  stop(): Promise<void>;
}

/**
 * WAL checkpoints off the event loop. SQLite's own (every 1000 pages, in the commit that
 * crosses them) copies pages into the database file and syncs it twice, stalling every
 * request for milliseconds: at a send's 19 pages, one in every 50 sends (docs/performance.md).
 * Here the serving connection never checkpoints by itself (wal_autocheckpoint 0): a worker
 * thread (src/db/sqlite/checkpointer.ts), with its own connection, runs PASSIVE checkpoints
 * every 100 ms, which never block a writer or a reader. The WAL restarts from its start only
 * at a write that finds it wholly copied, which steady writes never let a checkpoint in
 * another thread finish; so once it holds 10,000 frames the serving connection checkpoints
 * once itself, between statements, copying only what the checkpointer had not yet. Nothing
 * about durability changes: commits are written to the WAL as before (synchronous NORMAL),
 * and a checkpoint syncs as SQLite's own does.
 */
export function startCheckpoints(sqlite: Database, gate: Gate): Checkpoints {
  sqlite.run("PRAGMA wal_autocheckpoint = 0");
  const worker = new Worker(new URL("./checkpointer.ts", import.meta.url));
  // Bun's Worker has Node's unref (not in its DOM types): the thread never keeps the process alive.
  (worker as unknown as { unref(): void }).unref();
  let stopped: (() => void) | undefined;
  let catchingUp = false;
  let failed = false;
  /** Back to SQLite's own checkpoints: the thread could not do its work. */
  const fallBack = () => {
    if (failed) return;
    failed = true;
    sqlite.run("PRAGMA wal_autocheckpoint = 1000");
  };
  worker.onmessage = (event: MessageEvent<{ log?: number; error?: string; stopped?: true }>) => {
    const { log = 0, error, stopped: ended } = event.data;
    if (ended) return stopped?.();
    if (error !== undefined) return fallBack();
    if (log <= RESTART_AFTER_FRAMES || catchingUp) return;
    catchingUp = true;
    void Promise.resolve(
      gate.run(() => {
        try {
          sqlite.run("PRAGMA wal_checkpoint(PASSIVE)");
        } catch {
          // Busy (another process's checkpoint) or closing: the next pass tries again.
        }
      }),
    ).finally(() => (catchingUp = false));
  };
  worker.onerror = fallBack;
  worker.postMessage({ open: sqlite.filename, everyMs: CHECKPOINT_EVERY_MS });
  return {
    async stop() {
      // A timer that holds the event loop: the unref'd thread alone would let the process end before its answer.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        stopped = resolve;
        timer = setTimeout(resolve, STOP_WAIT_MS);
        worker.postMessage({ stop: true });
      });
      clearTimeout(timer);
      worker.terminate();
    },
  };
}
