import { z } from "zod";

const isoDateTime = z.iso.datetime({ offset: true, local: true });
const isoDate = z.iso.date();
const HAS_ZONE = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/;

/**
 * Microseconds since the epoch of an ISO 8601 date or date-time; a value without a zone is
 * UTC. Any precision is read: digits beyond the sixth are dropped (rounding down keeps an
 * exclusive `since` exact), so a millisecond `since` from an older client still works.
 * Returns null for anything else.
 */
export function parseIsoInstant(value: string): number | null {
  // ISO 8601 also writes offsets as ±hhmm and ±hh; zod's check wants ±hh:mm.
  const v = value
    .trim()
    .replace(/(T[\d:.,]+[+-]\d{2})(\d{2})$/, "$1:$2")
    .replace(/(T[\d:.,]+[+-]\d{2})$/, "$1:00");
  let text: string;
  if (isoDate.safeParse(v).success) text = `${v}T00:00:00Z`;
  else if (isoDateTime.safeParse(v).success) text = HAS_ZONE.test(v) ? v : `${v}Z`;
  else return null;
  // Date.parse reads milliseconds; the fraction's digits after the third are added as microseconds.
  const fraction = /[.,](\d+)/.exec(text)?.[1] ?? "";
  const ms = Date.parse(text.replace(/[.,]\d+/, ""));
  if (!Number.isFinite(ms)) return null;
  return ms * 1000 + Number(fraction.slice(0, 6).padEnd(6, "0"));
}

/** The wire form of a stored time (microseconds since the epoch): ISO 8601, UTC, 6 fractional digits. */
export function isoTime(us: number): string {
  const ms = Math.floor(us / 1000);
  const micros = String(us - ms * 1000).padStart(3, "0");
  return new Date(ms).toISOString().replace(/Z$/, `${micros}Z`);
}

/**
 * The wall clock in microseconds since the epoch: Date.now() plus the sub-millisecond part
 * of the monotonic clock, so it never strays from the wall clock by a millisecond.
 */
export function microClock(): number {
  return Date.now() * 1000 + Math.floor((performance.now() % 1) * 1000);
}
