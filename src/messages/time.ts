import { z } from "zod";

const isoDateTime = z.iso.datetime({ offset: true, local: true });
const isoDate = z.iso.date();
const HAS_ZONE = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/;

/**
 * Milliseconds since the epoch of an ISO 8601 date or date-time; a value without a zone is
 * UTC. Sub-millisecond digits are dropped (rounding down keeps an exclusive `since` exact).
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
  const ms = Date.parse(text.replace(/(\.\d{3})\d+/, "$1"));
  return Number.isFinite(ms) ? ms : null;
}

/** The wire form of a stored time: ISO 8601, UTC, milliseconds. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
