import { describe, expect, test } from "bun:test";
import { createClientAddress, parseTrustedProxy } from "../../src/api/client-address";

describe("the client address", () => {
  test("without trusted proxies: always the peer, X-Forwarded-For ignored", () => {
    const address = createClientAddress([]);
    expect(address("192.0.2.1", "203.0.113.7")).toBe("192.0.2.1");
    expect(address("::1", "203.0.113.7")).toBe("::1");
  });

  const address = createClientAddress(["10.0.0.0/8", "fd00::/8", "192.0.2.1"]);

  test("from an untrusted peer: the peer", () => {
    expect(address("198.51.100.1", "203.0.113.7")).toBe("198.51.100.1");
  });

  test("from a trusted peer: the first untrusted address walking from the right", () => {
    expect(address("10.0.0.1", "203.0.113.7")).toBe("203.0.113.7");
    expect(address("10.0.0.1", "1.1.1.1, 203.0.113.7, 10.2.3.4")).toBe("203.0.113.7");
    expect(address("192.0.2.1", " 2001:db8::1 ,fd00::2")).toBe("2001:db8::1");
    expect(address("::ffff:10.0.0.1", "::ffff:203.0.113.7")).toBe("203.0.113.7");
  });

  test("garbage is untrusted: it is the client as far as we can tell", () => {
    expect(address("10.0.0.1", "203.0.113.7, garbage")).toBe("garbage");
    expect(address("10.0.0.1", "x".repeat(500))).toHaveLength(64);
  });

  test("every hop trusted: the leftmost", () => {
    expect(address("10.0.0.1", "10.0.0.9, 10.0.0.8")).toBe("10.0.0.9");
  });

  test("a trusted peer without X-Forwarded-For: the peer", () => {
    expect(address("10.0.0.1", null)).toBe("10.0.0.1");
  });
});

test("TRUSTED_PROXIES entries: CIDRs and single addresses, IPv4 and IPv6", () => {
  expect(parseTrustedProxy("10.0.0.0/8")[1]).toBe(8);
  expect(parseTrustedProxy("::1")[1]).toBe(128);
  expect(parseTrustedProxy("192.0.2.1")[1]).toBe(32);
  for (const bad of ["10.0.0.0/33", "fd00::/129", "proxy", ""]) expect(() => parseTrustedProxy(bad)).toThrow();
});
