import { describe, expect, test } from "bun:test";
import { countryOf, isE164, phoneFromPath, phoneFromQuery } from "../../src/messages/phone";

describe("isE164 accepts possible E.164 numbers", () => {
  test.each([
    ["US", "+14155550123"],
    ["GB", "+442079460958"],
    ["DE", "+4930123456"],
    ["FR", "+33612345678"],
    ["JP", "+819012345678"],
    ["AU", "+61412345678"],
    ["BR", "+5511987654321"],
    ["IN", "+919876543210"],
    ["CN", "+861012345678"],
  ])("%s %s", (_country, phone) => {
    expect(isE164(phone)).toBe(true);
  });
});

describe("isE164 refuses anything that is not bare E.164", () => {
  test.each([
    ["spaces", "+1 415 555 0123"],
    ["dashes", "+1-415-555-0123"],
    ["parentheses", "+1(415)5550123"],
    ["dots", "+1.415.555.0123"],
    ["missing +", "14155550123"],
    ["double +", "++14155550123"],
    ["leading 0 after +", "+04155550123"],
    ["too short (6 digits)", "+123456"],
    ["too long (16 digits)", "+1234567890123456"],
    ["trailing newline", "+14155550123\n"],
    ["leading space", " +14155550123"],
    ["letters", "+1415555ABCD"],
    ["empty", ""],
    ["only +", "+"],
  ])("%s: %p", (_why, phone) => {
    expect(isE164(phone)).toBe(false);
  });
});

describe("isE164 refuses lengths impossible for the number's country", () => {
  test.each([
    ["US with 9 national digits", "+1415555012"],
    ["US with 13 national digits", "+14155550123456"],
    ["GB with 6 national digits", "+44207946"],
    ["VA/IT with 5 national digits", "+3906698"],
    ["no such country code 999", "+9991234567"],
  ])("%s: %p", (_why, phone) => {
    expect(isE164(phone)).toBe(false);
  });
});

describe("phoneFromPath reads a phone from a URL path segment", () => {
  test("percent-encoded + is decoded", () => {
    expect(phoneFromPath("%2B14155550123")).toBe("+14155550123");
    expect(phoneFromPath("%2b14155550123")).toBe("+14155550123");
  });

  test("a raw + is kept (not turned into a space)", () => {
    expect(phoneFromPath("+14155550123")).toBe("+14155550123");
  });

  test("a malformed % sequence is returned unchanged instead of throwing", () => {
    expect(phoneFromPath("%E0%A4%A")).toBe("%E0%A4%A");
    expect(phoneFromPath("%")).toBe("%");
    expect(phoneFromPath("%zz14155550123")).toBe("%zz14155550123");
  });
});

describe("phoneFromQuery reads a + that arrived as a space", () => {
  test("a leading space followed by digits becomes +digits", () => {
    expect(phoneFromQuery(" 14155550123")).toBe("+14155550123");
  });

  test.each([
    ["already E.164", "+14155550123"],
    ["no leading space", "14155550123"],
    ["two leading spaces", "  14155550123"],
    ["space then letters", " abc"],
    ["space then +", " +14155550123"],
    ["only a space", " "],
    ["empty", ""],
  ])("%s: %p is unchanged", (_why, raw) => {
    expect(phoneFromQuery(raw)).toBe(raw);
  });
});

describe("countryOf names the number's country", () => {
  test.each([
    ["+14155550123", "US"],
    ["+442079460958", "GB"],
    ["+819012345678", "JP"],
    ["+33612345678", "FR"],
  ])("%s is %s", (phone, country) => {
    expect(countryOf(phone)).toBe(country);
  });

  test("unknown country code or garbage gives undefined", () => {
    expect(countryOf("+9991234567")).toBeUndefined();
    expect(countryOf("not a phone")).toBeUndefined();
    expect(countryOf("")).toBeUndefined();
  });
});
