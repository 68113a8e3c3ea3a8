// Files that hold messages and secrets are the owner's alone, whatever the umask: the
// database with its -wal and -shm, media files, backups 0600; the folders made for them 0700.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backupSqlite } from "../../src/db/sqlite/backup";
import { openSqlite } from "../../src/db/sqlite/open";
import { folderStore, newMediaKey } from "../../src/media/store";

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

let root = "";
let umask = 0;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "textwire-files-"));
  // The widest umask: nothing may rely on it.
  umask = process.umask(0);
});

afterAll(() => {
  process.umask(umask);
  rmSync(root, { recursive: true, force: true });
});

describe("with umask 000", () => {
  test("a new SQLite database, its -wal and -shm are 0600, the folders made for it 0700", () => {
    const db = openSqlite(join(root, "data", "nested", "textwire.db"));
    try {
      db.run("CREATE TABLE IF NOT EXISTS t (x)");
      db.run("INSERT INTO t VALUES (1)");
      const file = join(root, "data", "nested", "textwire.db");
      expect([mode(file), mode(`${file}-wal`), mode(`${file}-shm`)]).toEqual(["600", "600", "600"]);
      expect([mode(join(root, "data")), mode(join(root, "data", "nested"))]).toEqual(["700", "700"]);
      // A folder that was there before is left as it was.
      expect(mode(root)).toBe("700");
    } finally {
      db.close();
    }
  });

  test("a backup is 0600", () => {
    const target = join(root, "backup.db");
    backupSqlite(join(root, "data", "nested", "textwire.db"), target, { force: false });
    expect(mode(target)).toBe("600");
  });

  test("a media file is 0600 and its folders 0700", async () => {
    const store = folderStore(join(root, "media"));
    const key = newMediaKey();
    await store.put(key, new Uint8Array([1, 2, 3]), "application/octet-stream");
    expect(mode(join(root, "media", key))).toBe("600");
    expect([mode(join(root, "media")), mode(join(root, "media", key.slice(0, 2)))]).toEqual(["700", "700"]);
    expect(await store.read(key)).toEqual(new Uint8Array([1, 2, 3]));
  });
});
