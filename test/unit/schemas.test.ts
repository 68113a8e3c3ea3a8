import { describe, expect, test } from "bun:test";
import type { z } from "zod";
import { historyInput, inboundInput, pollInput, sendInput } from "../../src/messages/schemas";

const PHONE = "+14155550123";
const E164_HINT = "must be E.164, e.g. +14155550123";

/** The field-level problems of a failed parse, as [path, message] pairs; fails the test on success. */
function problems(result: z.ZodSafeParseResult<unknown>): [string, string][] {
  if (result.success) throw new Error(`expected the input to be refused, got ${JSON.stringify(result.data)}`);
  return result.error.issues.map((i) => [i.path.map(String).join("."), i.message]);
}

/** The parsed value; fails the test with the issues when refused. */
function parsed<T>(result: z.ZodSafeParseResult<T>): T {
  if (!result.success) throw new Error(`expected the input to be accepted: ${JSON.stringify(result.error.issues)}`);
  return result.data;
}

describe("historyInput: defaults and phone decoding", () => {
  test("limit defaults to 50 and offset to 0", () => {
    expect(parsed(historyInput.safeParse({ phone: PHONE }))).toEqual({ phone: PHONE, limit: 50, offset: 0 });
  });

  test("a percent-encoded phone is decoded", () => {
    expect(parsed(historyInput.safeParse({ phone: "%2B14155550123" })).phone).toBe(PHONE);
  });

  test("a raw phone is kept", () => {
    expect(parsed(historyInput.safeParse({ phone: PHONE })).phone).toBe(PHONE);
  });

  test("limit above 100 passes the schema (the service clamps it)", () => {
    expect(parsed(historyInput.safeParse({ phone: PHONE, limit: 500 })).limit).toBe(500);
  });
});

describe("historyInput: bad values are refused with a message naming the problem", () => {
  test.each([
    [0, "must be at least 1"],
    [-1, "must be at least 1"],
    [1.5, "must be a whole number"],
    [Number.NaN, "must be a whole number"],
    [Number.POSITIVE_INFINITY, "must be a whole number"],
    ["0x10", "must be a whole number"],
    ["1.0", "must be a whole number"],
    ["1e2", "must be a whole number"],
    ["", "must be a whole number"],
    ["-1", "must be at least 1"],
  ])("limit %p: %s", (limit, message) => {
    expect(problems(historyInput.safeParse({ phone: PHONE, limit }))).toEqual([["limit", message]]);
  });

  test("a query string's digits are a whole number", () => {
    expect(historyInput.parse({ phone: PHONE, limit: "10", offset: " 20 " })).toMatchObject({ limit: 10, offset: 20 });
  });

  test.each([
    [-1, "must be at least 0"],
    [2.5, "must be a whole number"],
  ])("offset %p: %s", (offset, message) => {
    expect(problems(historyInput.safeParse({ phone: PHONE, offset }))).toEqual([["offset", message]]);
  });

  test("missing phone is required", () => {
    expect(problems(historyInput.safeParse({}))).toEqual([["phone", "is required"]]);
  });

  test("a bad phone, even decoded, gets the E.164 hint", () => {
    expect(problems(historyInput.safeParse({ phone: "%2B1415" }))).toEqual([["phone", E164_HINT]]);
    expect(problems(historyInput.safeParse({ phone: "%2B1%20415%20555%200123" }))).toEqual([["phone", E164_HINT]]);
  });
});

describe("pollInput: since, phone and limit", () => {
  test("since becomes microseconds since the epoch, from any precision", () => {
    expect(parsed(pollInput.safeParse({ since: "2026-11-21T09:30:00.123456Z" })).since).toBe(Date.UTC(2026, 10, 21, 9, 30, 0, 123) * 1000 + 456);
    expect(parsed(pollInput.safeParse({ since: "2026-11-21T09:30:00.123Z" })).since).toBe(Date.UTC(2026, 10, 21, 9, 30, 0, 123) * 1000);
  });

  test("since with an offset and without a zone", () => {
    expect(parsed(pollInput.safeParse({ since: "2026-11-21T11:30:00+02:00" })).since).toBe(Date.UTC(2026, 10, 21, 9, 30) * 1000);
    expect(parsed(pollInput.safeParse({ since: "2026-11-21T09:30:00" })).since).toBe(Date.UTC(2026, 10, 21, 9, 30) * 1000);
  });

  test("everything omitted: no since, no phone, limit 100", () => {
    expect(parsed(pollInput.safeParse({}))).toEqual({ limit: 100 });
  });

  test.each(["yesterday", "", "2026-13-01T00:00:00Z"])("unparseable since %p is refused with a message", (since) => {
    expect(problems(pollInput.safeParse({ since }))).toEqual([
      ["since", "must be an ISO 8601 date-time, e.g. 2026-11-21T09:30:00.123456Z"],
    ]);
  });

  test("a phone whose + arrived as a space is read as +digits", () => {
    expect(parsed(pollInput.safeParse({ phone: " 14155550123" })).phone).toBe(PHONE);
  });

  test("an E.164 phone is kept", () => {
    expect(parsed(pollInput.safeParse({ phone: PHONE })).phone).toBe(PHONE);
  });

  test("a bad phone gets the E.164 hint", () => {
    expect(problems(pollInput.safeParse({ phone: "14155550123" }))).toEqual([["phone", E164_HINT]]);
  });

  test.each([
    [0, "must be at least 1"],
    [1.5, "must be a whole number"],
  ])("limit %p: %s", (limit, message) => {
    expect(problems(pollInput.safeParse({ limit }))).toEqual([["limit", message]]);
  });
});

describe("sendInput: field errors name the field and the problem", () => {
  const send = sendInput(10);

  test("a good input passes unchanged", () => {
    expect(parsed(send.safeParse({ phone: PHONE, message: "hello" }))).toEqual({ phone: PHONE, message: "hello" });
  });

  test("missing fields are 'is required'", () => {
    expect(problems(send.safeParse({}))).toEqual([
      ["phone", "is required (or chat_id: exactly one of the two)"],
      ["message", "is required (or media)"],
    ]);
  });

  test("wrong types say what was expected", () => {
    expect(problems(send.safeParse({ phone: 14155550123, message: 5 }))).toEqual([
      ["phone", "must be a string"],
      ["message", "must be a string"],
    ]);
  });

  test.each(["+1 415 555 0123", "14155550123", "+1415555012", "+04155550123"])("phone %p gets the E.164 hint", (phone) => {
    expect(problems(send.safeParse({ phone, message: "hi" }))).toEqual([["phone", E164_HINT]]);
  });

  test("message problems come from the text rule", () => {
    expect(problems(send.safeParse({ phone: PHONE, message: "" }))).toEqual([["message", "must not be empty"]]);
    expect(problems(send.safeParse({ phone: PHONE, message: "\u3000 " }))).toEqual([["message", "must not be only whitespace"]]);
    expect(problems(send.safeParse({ phone: PHONE, message: "a".repeat(11) }))).toEqual([
      ["message", "must be at most 10 characters (got 11)"],
    ]);
  });

  test("the length limit is the one given", () => {
    expect(send.safeParse({ phone: PHONE, message: "a".repeat(10) }).success).toBe(true);
    expect(sendInput(3).safeParse({ phone: PHONE, message: "abcd" }).success).toBe(false);
  });
});

describe("inboundInput: the network's id is optional, 1 to 255 characters", () => {
  const inbound = inboundInput(100);

  test("no id is fine", () => {
    expect(parsed(inbound.safeParse({ phone: PHONE, message: "hi" }))).toEqual({ phone: PHONE, message: "hi" });
  });

  test("1 and 255 characters are fine", () => {
    expect(parsed(inbound.safeParse({ phone: PHONE, message: "hi", id: "x" })).id).toBe("x");
    expect(parsed(inbound.safeParse({ phone: PHONE, message: "hi", id: "x".repeat(255) })).id).toBe("x".repeat(255));
  });

  test("empty is refused", () => {
    expect(problems(inbound.safeParse({ phone: PHONE, message: "hi", id: "" }))).toEqual([["id", "must not be empty"]]);
  });

  test("256 characters are refused", () => {
    expect(problems(inbound.safeParse({ phone: PHONE, message: "hi", id: "x".repeat(256) }))).toEqual([
      ["id", "must be at most 255 characters"],
    ]);
  });

  test("a non-string id is refused", () => {
    expect(problems(inbound.safeParse({ phone: PHONE, message: "hi", id: 42 }))).toEqual([["id", "must be a string"]]);
  });

  test("phone and message follow the send rules", () => {
    expect(problems(inbound.safeParse({ message: "hi" }))).toEqual([["phone", "is required"]]);
    expect(problems(inbound.safeParse({ phone: PHONE, message: "a\u0000" }))).toEqual([
      ["message", "must not contain control characters other than tab, LF and CR"],
    ]);
  });
});
