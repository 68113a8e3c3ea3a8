/**
 * The WAL checkpointer's thread (src/db/sqlite/checkpoints.ts starts it): its own connection
 * to the database file, copying committed pages from the WAL into the database file with
 * PASSIVE checkpoints, which never wait for or block a writer or a reader. Each pass
 * answers how many frames the WAL holds, so the serving thread knows when a restart is due.
 */
import { Database } from "bun:sqlite";

declare const self: Worker;

let db: Database | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;
let everyMs = 100;

function pass() {
  try {
    const result = db!.query<{ busy: number; log: number; checkpointed: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get();
    self.postMessage({ log: result?.log ?? 0, checkpointed: result?.checkpointed ?? 0 });
  } catch (err) {
    self.postMessage({ error: String(err) });
  }
  timer = setTimeout(pass, everyMs);
}

self.onmessage = (event: MessageEvent<{ open?: string; everyMs?: number; stop?: true }>) => {
  const { data } = event;
  if (data.open) {
    everyMs = data.everyMs ?? everyMs;
    db = new Database(data.open, { readwrite: true });
    db.run("PRAGMA busy_timeout = 0");
    timer = setTimeout(pass, everyMs);
  } else if (data.stop) {
    clearTimeout(timer);
    db?.close();
    self.postMessage({ stopped: true });
  }
};
