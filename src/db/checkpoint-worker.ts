// The checkpointer's thread: its own connection, moving WAL pages into the database file.
import { Database } from "bun:sqlite";

declare const self: Worker;

self.onmessage = (event: MessageEvent<{ path: string; everyMs: number }>) => {
  const db = new Database(event.data.path);
  db.run("PRAGMA busy_timeout = 5000");
  postMessage({ ready: true });
  setInterval(() => {
    try {
      // PASSIVE: copies what no reader still needs and never blocks the writer.
      db.run("PRAGMA wal_checkpoint(PASSIVE)");
    } catch (err) {
      postMessage({ error: (err as Error).message });
    }
  }, event.data.everyMs);
};
