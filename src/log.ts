import type { LogLevel } from "./config";

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** An info line written at every LOG_LEVEL (start-up's `listening on`). */
  always(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

type Write = (line: string, urgent: boolean) => void;

/**
 * stdout in batches: the lines of one turn of the event loop in one write, not a system
 * call a request line. Warnings and errors are written at once, and what waits is
 * written on exit.
 */
function batchedStdout(): Write {
  let pending = "";
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (!pending) return;
    const out = pending;
    pending = "";
    process.stdout.write(out);
  };
  process.on("exit", flush);
  return (line, urgent) => {
    pending += line;
    if (urgent) flush();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}

let stdout: Write | undefined;

/** Structured logs: one JSON object a line on stdout (or `write`), below `level` dropped. */
export function createLogger(level: LogLevel, base: LogFields = {}, write?: Write): Logger {
  const min = RANK[level];
  const out = write ?? (stdout ??= batchedStdout());
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields, force = false) => {
    if (RANK[lvl] < min && !force) return;
    out(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields }) + "\n", RANK[lvl] >= RANK.warn || force);
  };
  return {
    debug: (msg, f) => emit("debug", msg, f),
    info: (msg, f) => emit("info", msg, f),
    warn: (msg, f) => emit("warn", msg, f),
    error: (msg, f) => emit("error", msg, f),
    always: (msg, f) => emit("info", msg, f, true),
    child: (fields) => createLogger(level, { ...base, ...fields }, out),
  };
}

/** The text of an unknown thrown value, for logs only (never for responses). */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
