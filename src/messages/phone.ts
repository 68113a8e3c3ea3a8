import { isPossiblePhoneNumber, parsePhoneNumberFromString } from "libphonenumber-js";

export const E164_HINT = "must be E.164, e.g. +14155550123";

const E164_SHAPE = /^\+[1-9]\d{6,14}$/;

/** libphonenumber's check costs ~20 µs; a busy service sees the same contacts again and again. */
const possible = new Map<string, boolean>();
const POSSIBLE_CACHE_SIZE = 10_000;

/** `+` then 7 to 15 digits, first not 0, and a possible number for its country. */
export function isE164(value: string): boolean {
  if (!E164_SHAPE.test(value)) return false;
  let ok = possible.get(value);
  if (ok === undefined) {
    ok = isPossiblePhoneNumber(value);
    if (possible.size >= POSSIBLE_CACHE_SIZE) possible.clear();
    possible.set(value, ok);
  }
  return ok;
}

/** A phone from a URL path: percent-encoded (`%2B1415…`) or raw (`+1415…`). */
export function phoneFromPath(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** A phone from a query string: an unencoded `+` arrives as a space. */
export function phoneFromQuery(raw: string): string {
  return /^ \d/.test(raw) ? `+${raw.slice(1)}` : raw;
}

/** ISO 3166 country of a number (e.g. "US"), when libphonenumber knows it. */
export function countryOf(phone: string): string | undefined {
  return parsePhoneNumberFromString(phone)?.country;
}
