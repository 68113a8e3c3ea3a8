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

/** Structured logs: one JSON object a line on stdout, below `level` dropped. */
export function createLogger(level: LogLevel, base: LogFields = {}, write = (line: string) => process.stdout.write(line)): Logger {
  const min = RANK[level];
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields, force = false) => {
    if (RANK[lvl] < min && !force) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields }) + "\n");
  };
  return {
    debug: (msg, f) => emit("debug", msg, f),
    info: (msg, f) => emit("info", msg, f),
    warn: (msg, f) => emit("warn", msg, f),
    error: (msg, f) => emit("error", msg, f),
    always: (msg, f) => emit("info", msg, f, true),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
  };
}

/** The text of an unknown thrown value, for logs only (never for responses). */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
