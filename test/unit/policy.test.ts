// The one policy every surface asks (src/auth/policy.ts): scopes, lines, reach, and no key wider than its maker.
import { describe, expect, test } from "bun:test";
import { allLinesRefusal, lineRefusal, reachRefusal, scopeRefusal, scopesOf, unlimited, widerRefusal, type KeyAuth, type KeyGrant } from "../../src/auth/policy";

const key = (over: Partial<KeyAuth> = {}): KeyAuth => ({ id: "k1", scopes: ["messages:read"], lines: null, reach: "any", expiresAt: null, ...over });
const grant = (over: Partial<KeyGrant> = {}): KeyGrant => ({ scopes: ["messages:read"], lines: null, reach: "any", expiresAt: null, ...over });

describe("scopeRefusal", () => {
  test.each([
    [["*"], "messages:send", null],
    [["messages:read"], "messages:read", null],
    [["messages:read"], "messages:send", "scope: this key lacks messages:send"],
    [["drafts:write"], "keys:manage", "scope: this key lacks keys:manage"],
  ] as const)("%p asking %p", (scopes, scope, refusal) => {
    const got = scopeRefusal(key({ scopes }), scope);
    expect(got?.message ?? null).toBe(refusal);
    if (got) expect(got.code).toBe("FORBIDDEN");
  });

  test("any one of several scopes is enough; the refusal names the first", () => {
    expect(scopeRefusal(key({ scopes: ["drafts:write"] }), "drafts:write", "messages:send")).toBeNull();
    expect(scopeRefusal(key({ scopes: ["messages:read"] }), "drafts:write", "messages:send")?.message).toBe("scope: this key lacks drafts:write");
  });

  test("* spelled out is every scope", () => {
    expect(scopesOf(unlimited("env:0"))).toHaveLength(8);
    expect(scopesOf(key({ scopes: ["keys:manage", "messages:read"] }))).toEqual(["messages:read", "keys:manage"]);
  });
});

describe("lineRefusal", () => {
  test("a key without lines may use every line", () => {
    expect(lineRefusal(key(), "ln_a")).toBeNull();
    expect(allLinesRefusal(key())).toBeNull();
  });

  test("a key limited to lines may use those only, and never reads across every line", () => {
    const limited = key({ lines: ["ln_a", "ln_b"] });
    expect(lineRefusal(limited, "ln_a")).toBeNull();
    const refused = lineRefusal(limited, "ln_c");
    expect(refused).toMatchObject({ code: "FORBIDDEN", message: "line: this key may not use ln_c" });
    expect(allLinesRefusal(limited)?.message).toBe("line: this key may use only ln_a, ln_b; name one");
    expect(lineRefusal(key({ lines: [] }), "ln_a")?.message).toBe("line: this key may not use ln_a");
  });
});

describe("reachRefusal", () => {
  const wrote = new Set(["+14155550100"]);
  const wroteFirst = async (phone: string) => wrote.has(phone);

  test("reach any: every phone", async () => {
    expect(await reachRefusal(key(), ["+14155550199"], wroteFirst)).toBeNull();
  });

  test("reach known: only phones that wrote first; the refusal names the phone", async () => {
    const known = key({ reach: "known" });
    expect(await reachRefusal(known, ["+14155550100"], wroteFirst)).toBeNull();
    expect(await reachRefusal(known, [], wroteFirst)).toBeNull();
    const refused = await reachRefusal(known, ["+14155550100", "+14155550199"], wroteFirst);
    expect(refused).toMatchObject({ code: "FORBIDDEN", message: "phone: this key may only write to contacts who wrote first (+14155550199 has not)" });
  });
});

describe("widerRefusal: a key never makes a key wider than itself", () => {
  const creator = key({ scopes: ["messages:read", "keys:manage"], lines: ["ln_a"], reach: "known", expiresAt: 2_000 });
  const within = grant({ scopes: ["messages:read"], lines: ["ln_a"], reach: "known", expiresAt: 1_000 });

  test("within its own scopes and limits: allowed", () => {
    expect(widerRefusal(creator, within)).toBeNull();
    expect(widerRefusal(unlimited("env:0"), grant({ scopes: ["*"] }))).toBeNull();
  });

  test.each([
    [{ scopes: ["*"] }, "scopes: this key lacks *"],
    [{ scopes: ["messages:read", "messages:send"] }, "scopes: this key lacks messages:send"],
    [{ lines: null }, "lines: this key may not use every line"],
    [{ lines: ["ln_a", "ln_b"] }, "lines: this key may not use ln_b"],
    [{ reach: "any" }, 'reach: this key may only reach "known" contacts'],
    [{ expiresAt: null }, "expires_at: this key expires at 1970-01-01T00:00:02.000Z"],
    [{ expiresAt: 3_000 }, "expires_at: this key expires at 1970-01-01T00:00:02.000Z"],
  ] as [Partial<KeyGrant>, string][])("%p is refused", (over, what) => {
    const refused = widerRefusal(creator, { ...within, ...over });
    expect(refused).toMatchObject({ code: "FORBIDDEN", message: `${what}; a key cannot create a key wider than itself` });
  });
});
