/**
 * An ISO 8601 date, or date-time in the extended format: hours and minutes, optional
 * seconds and fraction (`.` or `,`), an optional zone (`Z`, ±hh:mm, ±hhmm, ±hh). A space
 * may stand for `T`, and a space before a zone's digits for `+` (an unencoded `+` in a
 * query string arrives as a space).
 */
const ISO_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([zZ])|([+\- ])(\d{2})(?::?(\d{2}))?)?)?$/;

/**
 * Microseconds since the epoch of an ISO 8601 date or date-time; a value without a zone is
 * UTC. Any precision is read: digits beyond the sixth are dropped (rounding down keeps an
 * exclusive `since` exact), so a millisecond `since` from an older client still works.
 * Returns null for anything else, including dates and times that do not exist.
 */
export function parseIsoInstant(value: string): number | null {
  const m = ISO_INSTANT.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h = "0", mi = "0", sec = "0", fraction = "", , sign, oh = "0", om = "0"] = m;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, sec].map(Number) as [number, number, number, number, number, number];
  if (hour > 23 || minute > 59 || second > 59 || Number(oh) > 23 || Number(om) > 59) return null;
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  // Date.UTC rolls February 30 over into March: a date that does not exist reads back differently.
  const check = new Date(ms);
  if (!Number.isFinite(ms) || check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return null;
  const offsetMinutes = sign ? (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om)) : 0;
  return (ms - offsetMinutes * 60_000) * 1000 + Number(fraction.slice(0, 6).padEnd(6, "0"));
}

const US_PER_DAY = 86_400_000_000;
const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, "0"));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, "0"));
/** `YYYY-MM-DDT` of recent days (day number since the epoch → prefix): pages repeat their days. */
const dayPrefixes = new Map<number, string>();

/**
 * The wire form of a stored time (microseconds since the epoch): ISO 8601, UTC, 6 fractional
 * digits. Every record of a page goes through here, so the date part comes from a small
 * cache and the time of day from digit tables, not from a Date per record.
 */
export function isoTime(us: number): string {
  const day = Math.floor(us / US_PER_DAY);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    prefix = new Date(day * 86_400_000).toISOString().slice(0, 11);
    // Years outside 0000–9999 are written with a sign and six digits: no shortcut there.
    if (prefix.length !== 11 || prefix[10] !== "T") return isoTimeSlow(us);
    if (dayPrefixes.size >= 4096) dayPrefixes.clear();
    dayPrefixes.set(day, prefix);
  }
  let rest = us - day * US_PER_DAY;
  const hours = Math.floor(rest / 3_600_000_000);
  rest -= hours * 3_600_000_000;
  const minutes = Math.floor(rest / 60_000_000);
  rest -= minutes * 60_000_000;
  const seconds = Math.floor(rest / 1_000_000);
  rest -= seconds * 1_000_000;
  const millis = Math.floor(rest / 1000);
  return `${prefix}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[millis]}${THREE_DIGITS[rest - millis * 1000]}Z`;
}

function isoTimeSlow(us: number): string {
  const ms = Math.floor(us / 1000);
  const micros = String(us - ms * 1000).padStart(3, "0");
  return new Date(ms).toISOString().replace(/Z$/, `${micros}Z`);
}
