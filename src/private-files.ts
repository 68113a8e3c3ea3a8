import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";

// Files that hold messages, keys or secrets (the database with its -wal and -shm, media,
// backups) are the owner's alone: files 0600, the folders made for them 0700, set with
// chmod after creation so no umask widens them. Folders that existed before are left as
// they are: they may be shared on purpose (the working directory, /var/lib).

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** The folders between the first one `mkdir -p` made and `path`, itself included. */
function made(first: string | undefined, path: string): string[] {
  if (first === undefined) return [];
  const folders: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    folders.push(dir);
    if (dir === resolve(first) || dir === dirname(dir)) return folders;
  }
}

/** `mkdir -p path`; every folder it made is 0700. */
export function makePrivateDirSync(path: string): void {
  for (const dir of made(mkdirSync(path, { recursive: true, mode: DIR_MODE }), path)) chmodSync(dir, DIR_MODE);
}

export async function makePrivateDir(path: string): Promise<void> {
  const first = await mkdir(path, { recursive: true, mode: DIR_MODE });
  await Promise.all(made(first, path).map((dir) => chmod(dir, DIR_MODE)));
}

/**
 * Creates `path` empty and 0600 when it does not exist (SQLite then keeps that mode, and gives
 * it to the -wal and -shm files it makes beside it); an existing file is left as it is.
 */
export function createPrivateFileSync(path: string): void {
  if (existsSync(path)) return;
  try {
    closeSync(openSync(path, "wx", FILE_MODE));
  } catch (err) {
    // Another process created it first: theirs stands.
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return;
    throw err;
  }
  chmodSync(path, FILE_MODE);
}

/** Writes `bytes` to a new file readable by its owner only. */
export async function writePrivateFile(path: string, bytes: Uint8Array): Promise<void> {
  await writeFile(path, bytes, { mode: FILE_MODE });
  await chmod(path, FILE_MODE);
}
