import { lookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";

/**
 * Where an endpoint may point: https only, and only to public unicast addresses (never
 * loopback, private, link-local (cloud metadata at 169.254.169.254 included), carrier-grade
 * NAT, unique-local, multicast or reserved ranges). Checked when an endpoint is created or
 * changed, and again before every attempt after resolving the host, so a name that later
 * resolves inward is refused then. `allowPrivate` (ALLOW_PRIVATE_URLS=true, development and
 * tests) lifts every rule but "http or https".
 */

/** Why this address may not be called, or null when it is a public unicast address. */
export function blockedAddress(address: string): string | null {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  // ipaddr's names (linkLocal, carrierGradeNat) as words: link-local, carrier-grade-nat.
  return range === "unicast" ? null : `${parsed.toString()} is a ${range.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} address`;
}

/** The URL's problem before any lookup (scheme, form, a literal blocked address), or null. */
export function endpointUrlProblem(url: string, allowPrivate: boolean): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "must be an absolute URL, e.g. https://example.com/webhooks";
  }
  if (parsed.protocol !== "https:" && !(allowPrivate && parsed.protocol === "http:")) return "must be an https URL";
  if (parsed.username || parsed.password) return "must not contain credentials";
  if (allowPrivate) return null;
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(host)) return blockedAddress(host);
  if (host === "localhost" || host.endsWith(".localhost")) return `${host} is a loopback address`;
  return null;
}

/**
 * The URL's problem once its host is resolved (every address it resolves to must be
 * allowed), or null. A host that does not resolve is a problem too.
 */
export async function resolvedUrlProblem(url: string, allowPrivate: boolean): Promise<string | null> {
  const early = endpointUrlProblem(url, allowPrivate);
  if (early || allowPrivate) return early;
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(host)) return null;
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch {
    return `${host} does not resolve`;
  }
  if (addresses.length === 0) return `${host} does not resolve`;
  for (const { address } of addresses) {
    const blocked = blockedAddress(address);
    if (blocked) return `${host} resolves to ${blocked}`;
  }
  return null;
}
