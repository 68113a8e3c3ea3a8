import { randomBytes } from "node:crypto";
import { rename, rm } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { S3Client } from "bun";
import { makePrivateDir, writePrivateFile } from "../private-files";

/**
 * Where media bytes are kept (MEDIA_STORE, docs/operations.md): a folder on this machine, or
 * `s3://bucket/prefix` in any S3-compatible store through Bun's S3 client (the choice when
 * processes run on several machines). The database keeps each file's key, type and size;
 * the store keeps only bytes, under keys nobody can guess.
 */
export interface MediaStore {
  /** `folder /abs/path` or `s3://bucket/prefix`, for logs. */
  readonly describe: string;
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** The whole file. */
  read(key: string): Promise<Uint8Array<ArrayBuffer>>;
  /** Bytes `start` to `end`, both inclusive (a Range request's bounds). */
  readRange(key: string, start: number, end: number): Promise<Uint8Array<ArrayBuffer>>;
  /** Gone already is not an error. */
  delete(key: string): Promise<void>;
}

/** A fresh key: 128 random bits, spread over 256 folders so no folder grows huge. */
export function newMediaKey(): string {
  const hex = randomBytes(16).toString("hex");
  return `${hex.slice(0, 2)}/${hex}`;
}

const KEY = /^[0-9a-f]{2}\/[0-9a-f]{32}$/;

function checkedKey(key: string): string {
  // Keys come from newMediaKey only; anything else is a bug, never a path to follow.
  if (!KEY.test(key)) throw new Error(`not a media key: ${JSON.stringify(key)}`);
  return key;
}

/** A folder: relative paths are taken from the working directory, as DATABASE_URL's are. */
export function folderStore(path: string): MediaStore {
  const root = resolve(path);
  const file = (key: string) => resolve(root, checkedKey(key));
  return {
    describe: `folder ${root}`,
    async put(key, bytes) {
      const target = file(key);
      await makePrivateDir(dirname(target));
      // Written aside then renamed, so a reader never sees half a file.
      const temp = `${target}.${process.pid}.part`;
      await writePrivateFile(temp, bytes);
      await rename(temp, target);
    },
    async read(key) {
      return new Uint8Array(await Bun.file(file(key)).arrayBuffer());
    },
    async readRange(key, start, end) {
      return new Uint8Array(await Bun.file(file(key)).slice(start, end + 1).arrayBuffer());
    },
    async delete(key) {
      await rm(file(key), { force: true });
    },
  };
}

/** The S3 settings from the environment: S3_* first, else AWS_* (the names Bun's S3 client documents). */
export interface S3Settings {
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  region?: string;
}

export function s3SettingsFromEnv(env: Record<string, string | undefined>): S3Settings {
  const pick = (...names: string[]) => names.map((n) => env[n]).find((v) => v !== undefined && v !== "");
  const settings: S3Settings = {};
  const endpoint = pick("S3_ENDPOINT", "AWS_ENDPOINT");
  const accessKeyId = pick("S3_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID");
  const secretAccessKey = pick("S3_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY");
  const sessionToken = pick("S3_SESSION_TOKEN", "AWS_SESSION_TOKEN");
  const region = pick("S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION");
  if (endpoint) settings.endpoint = endpoint;
  if (accessKeyId) settings.accessKeyId = accessKeyId;
  if (secretAccessKey) settings.secretAccessKey = secretAccessKey;
  if (sessionToken) settings.sessionToken = sessionToken;
  if (region) settings.region = region;
  return settings;
}

/** `s3://bucket/prefix`: objects `<prefix>/<key>` in that bucket. */
export function s3Store(url: string, settings: S3Settings): MediaStore {
  const parsed = new URL(url);
  const bucket = parsed.hostname;
  const prefix = parsed.pathname.replace(/^\/+|\/+$/g, "");
  const client = new S3Client({ bucket, ...settings });
  const object = (key: string) => client.file(prefix ? `${prefix}/${checkedKey(key)}` : checkedKey(key));
  return {
    describe: `s3://${bucket}/${prefix}`,
    async put(key, bytes, contentType) {
      await object(key).write(bytes, { type: contentType });
    },
    async read(key) {
      return new Uint8Array(await object(key).arrayBuffer());
    },
    async readRange(key, start, end) {
      return new Uint8Array(await object(key).slice(start, end + 1).arrayBuffer());
    },
    async delete(key) {
      await object(key).delete();
    },
  };
}

/** The store MEDIA_STORE names: `s3://bucket[/prefix]`, else a folder. */
export function openMediaStore(spec: string, env: Record<string, string | undefined> = process.env): MediaStore {
  return spec.startsWith("s3://") ? s3Store(spec, s3SettingsFromEnv(env)) : folderStore(spec);
}
