import { describe, expect, test } from "bun:test";
import { isoTime, parseIsoInstant } from "../../src/messages/time";
import { microClock } from "../../src/vocabulary/time";

/** Microseconds since the epoch of a UTC date (the unit of stored message times). */
const at = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0, us = 0) => Date.UTC(y, mo - 1, d, h, mi, s, ms) * 1000 + us;

/** Runs `fn` with the process in another time zone, so "local time" would differ from UTC. */
function inTimeZone(tz: string, fn: () => void) {
  const saved = process.env.TZ;
  process.env.TZ = tz;
  try {
    // Guard: the zone really changed, so a local-time reading would give another instant.
    expect(new Date(2026, 0, 1).getTime()).not.toBe(Date.UTC(2026, 0, 1));
    fn();
  } finally {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  }
}

describe("parseIsoInstant reads ISO 8601 instants", () => {
  test("Z (UTC)", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00Z")).toBe(at(2026, 11, 21, 9, 30));
  });

  test("milliseconds are kept", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00.123Z")).toBe(at(2026, 11, 21, 9, 30, 0, 123));
    expect(parseIsoInstant("2026-11-21T09:30:00.12Z")).toBe(at(2026, 11, 21, 9, 30, 0, 120));
  });

  test("positive offset +02:00", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00+02:00")).toBe(at(2026, 11, 21, 7, 30));
  });

  test("negative offset -05:30", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00-05:30")).toBe(at(2026, 11, 21, 15, 0));
  });

  // ISO 8601 also allows ±hhmm and ±hh offsets.
  test("negative offset without colon -0530 is accepted", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00-0530")).toBe(at(2026, 11, 21, 15, 0));
  });

  test("positive offset without colon +0200 is accepted", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00+0200")).toBe(at(2026, 11, 21, 7, 30));
  });

  test("hour-only offset +02 is accepted", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00+02")).toBe(at(2026, 11, 21, 7, 30));
  });

  test("minutes without seconds, with a zone or without", () => {
    expect(parseIsoInstant("2026-11-21T09:30Z")).toBe(at(2026, 11, 21, 9, 30));
    expect(parseIsoInstant("2026-11-21T09:30+01:00")).toBe(at(2026, 11, 21, 8, 30));
    expect(parseIsoInstant("2026-11-21T09:30")).toBe(at(2026, 11, 21, 9, 30));
  });

  test("a comma as the decimal sign, as ISO 8601 allows", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00,5Z")).toBe(at(2026, 11, 21, 9, 30, 0, 500));
  });

  test("a space for T (RFC 3339), and a space for the + of an offset (an unencoded + in a query string)", () => {
    expect(parseIsoInstant("2026-11-21 09:30:00Z")).toBe(at(2026, 11, 21, 9, 30));
    expect(parseIsoInstant("2026-11-21T09:30:00 05:30")).toBe(at(2026, 11, 21, 4, 0));
    expect(parseIsoInstant("2026-11-21T09:30:00.123456 02:00")).toBe(at(2026, 11, 21, 7, 30, 0, 123, 456));
  });

  test("surrounding whitespace is ignored", () => {
    expect(parseIsoInstant("  2026-11-21T09:30:00Z ")).toBe(at(2026, 11, 21, 9, 30));
  });
});

describe("parseIsoInstant treats a value without a zone as UTC", () => {
  test("date-time without zone is UTC, whatever the process time zone", () => {
    inTimeZone("Asia/Kolkata", () => {
      expect(parseIsoInstant("2026-11-21T09:30:00")).toBe(at(2026, 11, 21, 9, 30));
      expect(parseIsoInstant("2026-11-21T09:30:00.250")).toBe(at(2026, 11, 21, 9, 30, 0, 250));
    });
    inTimeZone("America/Los_Angeles", () => {
      expect(parseIsoInstant("2026-07-01T00:00:00")).toBe(at(2026, 7, 1));
    });
  });

  test("date only is midnight UTC", () => {
    inTimeZone("Pacific/Auckland", () => {
      expect(parseIsoInstant("2026-11-21")).toBe(at(2026, 11, 21));
    });
  });
});

describe("parseIsoInstant reads any precision to the microsecond, truncating beyond (never rounds up)", () => {
  test("six digits are kept", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00.123456Z")).toBe(at(2026, 11, 21, 9, 30, 0, 123, 456));
  });

  test("four digits", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00.1239Z")).toBe(at(2026, 11, 21, 9, 30, 0, 123, 900));
  });

  test("seven nines stay in the same second", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00.9999999Z")).toBe(at(2026, 11, 21, 9, 30, 0, 999, 999));
  });

  test("with an offset", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00.000999+02:00")).toBe(at(2026, 11, 21, 7, 30, 0, 0, 999));
  });

  test("a millisecond since from an older client means the same instant", () => {
    expect(parseIsoInstant("2026-11-21T09:30:00.123Z")).toBe(at(2026, 11, 21, 9, 30, 0, 123));
  });
});

describe("parseIsoInstant refuses what is not an ISO 8601 instant", () => {
  test.each([
    ["garbage", "garbage"],
    ["empty", ""],
    ["only spaces", "   "],
    ["month 13", "2026-13-01T00:00:00Z"],
    ["February 30", "2026-02-30T00:00:00Z"],
    ["hour 25", "2026-11-21T25:00:00Z"],
    ["minute 60", "2026-11-21T09:60:00Z"],
    ["offset +25:00", "2026-11-21T09:30:00+25:00"],
    ["hour alone", "2026-11-21T09Z"],
    ["zone without a time", "2026-11-21Z"],
    ["two spaces", "2026-11-21  09:30:00Z"],
    ["epoch number", "1795253400000"],
    ["English date", "November 21, 2026"],
    ["RFC 2822", "Sat, 21 Nov 2026 09:30:00 GMT"],
    ["slashes", "2026/11/21"],
  ])("%s: %p", (_why, value) => {
    expect(parseIsoInstant(value)).toBeNull();
  });
});

describe("isoTime is the wire form: ISO 8601, UTC, microseconds", () => {
  test("formats with Z and six fraction digits", () => {
    expect(isoTime(at(2026, 11, 21, 9, 30, 0, 123, 456))).toBe("2026-11-21T09:30:00.123456Z");
    expect(isoTime(at(2026, 11, 21, 9, 30))).toBe("2026-11-21T09:30:00.000000Z");
    expect(isoTime(1)).toBe("1970-01-01T00:00:00.000001Z");
    expect(isoTime(0)).toBe("1970-01-01T00:00:00.000000Z");
  });

  test("is UTC whatever the process time zone", () => {
    inTimeZone("Asia/Tokyo", () => {
      expect(isoTime(at(2026, 1, 1, 0, 0, 0, 5))).toBe("2026-01-01T00:00:00.005000Z");
    });
  });

  test("agrees with Date's own formatting at every kind of instant", () => {
    const viaDate = (us: number) => {
      const ms = Math.floor(us / 1000);
      return new Date(ms).toISOString().replace(/Z$/, `${String(us - ms * 1000).padStart(3, "0")}Z`);
    };
    const edges = [-1, -86_400_000_000, at(1969, 12, 31, 23, 59, 59, 999, 999), at(2024, 2, 29, 12), at(2100, 3, 1), Number.MAX_SAFE_INTEGER];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const samples = Array.from({ length: 5000 }, () => Math.floor((random() - 0.1) * Number.MAX_SAFE_INTEGER));
    for (const us of [...edges, ...samples]) expect(isoTime(us)).toBe(viaDate(us));
  });

  test("writes years before 0000 as Date does, signed", () => {
    expect(isoTime(at(-1, 1, 1))).toBe("-000001-01-01T00:00:00.000000Z");
  });

  test("round-trips through parseIsoInstant exactly", () => {
    for (const us of [0, 1, 999, 999_999, at(2026, 11, 21, 9, 30, 0, 1, 7), at(2030, 2, 28, 23, 59, 59, 999, 999)]) {
      const wire = isoTime(us);
      expect(wire).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
      expect(parseIsoInstant(wire)).toBe(us);
    }
  });
});

describe("microClock", () => {
  test("is the wall clock in microseconds, within a millisecond", () => {
    const before = Date.now() * 1000;
    const us = microClock();
    const after = (Date.now() + 1) * 1000;
    expect(Number.isSafeInteger(us)).toBe(true);
    expect(us).toBeGreaterThanOrEqual(before);
    expect(us).toBeLessThan(after);
  });
});
