// Boots the real Textwire server (`bun run start`) and CLI (`bun run textwire`) as
// subprocesses against a temporary SQLite file, and talks to them over real HTTP.
//
// Every wait is bounded and fails with the output collected so far. Servers run in
// their own process group, so kill() also ends the `bun src/main.ts` child that
// `bun run` starts (SIGKILL is not forwarded by `bun run`).
//
// Failed authentication is throttled per client address (docs/api.md: 20 a minute),
// and every test talks from 127.0.0.1: keep each server below 20 failed attempts
// unless the test is about that throttle.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { configSchema } from "../../src/config";

export const ROOT = resolve(import.meta.dir, "..", "..");

const STARTUP_MS = 15_000;
const STOP_MS = 15_000;
const CLI_MS = 15_000;

const LISTENING = /listening on (http:\/\/[0-9.]+:\d+)/;
export const KEY_PATTERN = /\btw_[A-Za-z0-9_-]{24,}/g;

/**
 * Every variable the server reads (src/config.ts, docs/operations.md), and NODE_ENV: the
 * inherited environment never decides one of them.
 */
const CONFIG_VARS = [...Object.keys(configSchema.shape), "NODE_ENV"];

/** An env overlay; `undefined` removes a variable. */
export type EnvOverlay = Record<string, string | undefined>;

/** A fresh API key for `API_KEYS` (at least 24 letters, digits, `_` or `-`: docs/operations.md). */
export function newApiKey(): string {
  return "tw_test_" + randomBytes(24).toString("base64url");
}

export interface TempDb {
  dir: string;
  path: string;
  cleanup(): void;
}

let runRoot: string | undefined;

/**
 * One folder per test run holds every temporary database. bun test fires no exit event,
 * so a detached janitor removes the folder once this process has gone.
 */
function tempRoot(): string {
  if (runRoot) return runRoot;
  const root = mkdtempSync(join(tmpdir(), "textwire-e2e-"));
  const janitor = Bun.spawn(
    ["sh", "-c", 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; rm -rf "$2"', "janitor", String(process.pid), root],
    { stdin: "ignore", stdout: "ignore", stderr: "ignore", detached: true },
  );
  janitor.unref();
  runRoot = root;
  return root;
}

/** A database path inside a new temporary folder (the file itself does not exist yet). */
export function tempDb(): TempDb {
  const dir = mkdtempSync(join(tempRoot(), "db-"));
  return {
    dir,
    path: join(dir, "textwire.db"),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function buildEnv(overlay: EnvOverlay): Record<string, string> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of CONFIG_VARS) delete env[name];
  Object.assign(env, overlay);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** Collects a child's output stream as text while it runs. */
class Collected {
  text = "";
  readonly done: Promise<void>;
  constructor(stream: ReadableStream<Uint8Array>) {
    this.done = this.pump(stream);
  }
  private async pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) this.text += decoder.decode(chunk, { stream: true });
    } catch {
      // The stream ends abruptly when the process is killed; what was read stays.
    }
    this.text += decoder.decode();
  }
}

const live = new Set<Subprocess>();

function killGroup(proc: Subprocess): void {
  // Only a group we have not reaped yet: a reaped leader's id may be reused.
  if (!live.has(proc)) return;
  try {
    process.kill(-proc.pid, "SIGKILL");
  } catch {
    // Already gone.
  }
  try {
    proc.kill("SIGKILL");
  } catch {
    // Already gone.
  }
  live.delete(proc);
}

// A crashed test run must not leave servers behind.
process.on("exit", () => {
  for (const proc of [...live]) killGroup(proc);
});

function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: Timer | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((res) => {
    timer = setTimeout(() => res(TIMED_OUT), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
const TIMED_OUT = Symbol("timed out");

function describeOutput(stdout: string, stderr: string): string {
  return `\n--- stdout ---\n${stdout.slice(-4000)}\n--- stderr ---\n${stderr.slice(-4000)}`;
}

export interface Server {
  /** e.g. http://127.0.0.1:43121 */
  url: string;
  /** The key to use: the one passed in API_KEYS, else the one the server printed, else "". */
  apiKey: string;
  dbPath: string;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly stdout: string;
  readonly stderr: string;
  /** Sends the signal and waits (bounded) for the process to exit; returns its exit code. */
  stop(signal?: "SIGTERM" | "SIGINT"): Promise<number>;
  /** SIGKILL to the whole process group; safe to call more than once. */
  kill(): void;
  /**
   * fetch relative to url, with Authorization: Bearer <key> unless headers set one;
   * key defaults to apiKey, null sends no Authorization header.
   */
  fetch(path: string, init?: RequestInit, key?: string | null): Promise<Response>;
}

export interface StartOptions {
  /** Extra or overriding environment (`undefined` removes a variable). */
  env?: EnvOverlay;
  /** SQLite path; default: a new temporary file. */
  dbPath?: string;
  /** The key put in API_KEYS; default a new one; null starts the server with no API_KEYS. */
  apiKey?: string | null;
  /** `bun run start MODE`: `api` (no workflows) or `worker` (no HTTP); default both. */
  mode?: "api" | "worker";
}

export interface Spawned {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly stdout: string;
  readonly stderr: string;
  /** Waits (bounded) for exit and for all output; kills the group on time-out. */
  exited(ms?: number): Promise<number>;
  /** Sends the signal and waits (bounded) for the exit code. */
  stop(signal?: "SIGTERM" | "SIGINT"): Promise<number>;
  kill(): void;
}

/** Starts `bun run start` without waiting for it to listen. */
export function spawnServer(opts: StartOptions = {}): Spawned & { dbPath: string; apiKey: string | null } {
  const dbPath = opts.dbPath ?? tempDb().path;
  const apiKey = opts.apiKey === undefined ? newApiKey() : opts.apiKey;
  const env = buildEnv({
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: dbPath,
    API_KEYS: apiKey ?? "",
    WORKFLOWS_DIR: "off",
    RATE_LIMIT_PER_MINUTE: "0",
    LOG_LEVEL: "info",
    ...opts.env,
  });
  // Object.assign keeps the stdout/stderr getters alive (a spread would freeze them).
  return Object.assign(spawnBun(["run", "--silent", "start", ...(opts.mode ? [opts.mode] : [])], env), { dbPath, apiKey });
}

function spawnBun(args: string[], env: Record<string, string>): Spawned {
  const proc = Bun.spawn(["bun", ...args], {
    cwd: ROOT,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  live.add(proc);
  const out = new Collected(proc.stdout);
  const err = new Collected(proc.stderr);
  const kill = () => killGroup(proc);
  return {
    proc,
    get stdout() {
      return out.text;
    },
    get stderr() {
      return err.text;
    },
    kill,
    stop(signal = "SIGTERM") {
      try {
        proc.kill(signal);
      } catch {
        // Already gone: exited() reports how it ended.
      }
      return this.exited(STOP_MS);
    },
    async exited(ms = CLI_MS) {
      const code = await within(proc.exited, ms);
      if (code === TIMED_OUT) {
        kill();
        await within(Promise.all([out.done, err.done]), 2000);
        throw new Error(`bun ${args.join(" ")} did not exit within ${ms} ms` + describeOutput(out.text, err.text));
      }
      live.delete(proc);
      // Reap a child that outlived `bun run`, then take the rest of the output.
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        // Group already empty.
      }
      await within(Promise.all([out.done, err.done]), 2000);
      return code;
    },
  };
}

/** Starts the server and waits (at most 15 s) until it logs that it is listening. */
export async function startServer(opts: StartOptions = {}): Promise<Server> {
  const child = spawnServer(opts);
  const deadline = Date.now() + STARTUP_MS;
  let url: string | undefined;
  while (url === undefined) {
    const match = LISTENING.exec(child.stdout);
    if (match?.[1]) {
      url = match[1];
      break;
    }
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      await within(child.exited(), 2000);
      throw new Error(`server exited (code ${child.proc.exitCode}) before listening` + describeOutput(child.stdout, child.stderr));
    }
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`server did not log "listening on" within ${STARTUP_MS} ms` + describeOutput(child.stdout, child.stderr));
    }
    await Bun.sleep(20);
  }
  const printed = child.stdout.match(KEY_PATTERN)?.[0];
  const apiKey = child.apiKey ?? printed ?? "";
  const base = url;
  return {
    url: base,
    apiKey,
    dbPath: child.dbPath,
    proc: child.proc,
    get stdout() {
      return child.stdout;
    },
    get stderr() {
      return child.stderr;
    },
    kill: child.kill,
    stop: (signal) => child.stop(signal),
    fetch(path, init = {}, key = apiKey) {
      const headers = new Headers(init.headers);
      if (!headers.has("authorization") && key) headers.set("authorization", `Bearer ${key}`);
      return fetch(base + path, { ...init, headers });
    },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `bun run textwire ...args` (bounded at 15 s) with the test environment plus env. */
export async function runCli(args: string[], env: EnvOverlay = {}): Promise<CliResult> {
  const child = spawnBun(
    ["run", "--silent", "textwire", ...args],
    buildEnv({ WORKFLOWS_DIR: "off", LOG_LEVEL: "info", ...env }),
  );
  const code = await child.exited(CLI_MS);
  return { code, stdout: child.stdout, stderr: child.stderr };
}

/** Non-empty lines of a text. */
export function lines(text: string): string[] {
  return text.split(/\r?\n/).filter((l) => l.trim() !== "");
}

/**
 * Calls `check` until it returns something other than undefined or false, at most `ms`
 * (default 10 s); then fails naming `what`.
 */
export function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 10_000,
): Promise<T> {
  return waitFor(what, ms, check);
}

/** Polls `probe` until it returns something truthy; fails after `ms` with `context()` (bounded). */
export async function waitFor<T>(
  what: string,
  ms: number,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  context: () => string = () => "",
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${context().slice(-6000)}`);
    await Bun.sleep(20);
  }
}
