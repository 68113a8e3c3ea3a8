import { lookup } from "node:dns/promises";
import { checkServerIdentity, type PeerCertificate } from "node:tls";
import ipaddr from "ipaddr.js";

/**
 * Where an endpoint may point: https only, and only to public unicast addresses (never
 * loopback, private, link-local (cloud metadata at 169.254.169.254 included), carrier-grade
 * NAT, unique-local, multicast or reserved ranges). Checked when an endpoint is created or
 * changed, and again before every attempt after resolving the host once, so a name that later
 * resolves inward is refused then; the attempt connects to the address that was checked
 * (pinnedRequest), so a name that changes its answer between check and connect (DNS
 * rebinding) cannot slip inward. `allowPrivate` (ALLOW_PRIVATE_URLS=true, development and
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

/** Resolves a host name to its addresses (node's DNS lookup; tests give their own). */
export type Lookup = (host: string) => Promise<{ address: string }[]>;
const systemLookup: Lookup = (host) => lookup(host, { all: true, verbatim: true });

/** A URL whose host was resolved once and checked: requests go to `address`, never to a second lookup. */
export interface PinnedUrl {
  url: string;
  /** The address every request to this URL connects to. */
  address: string;
}

/**
 * Resolves the URL's host once and checks every address it resolves to (ALLOW_PRIVATE_URLS
 * lifts the check, not the pinning): `{ problem }`, or the URL pinned to its first address.
 * A host that does not resolve is a problem too.
 */
export async function pinnedUrl(url: string, allowPrivate: boolean, resolveHost: Lookup = systemLookup): Promise<{ problem: string } | { pinned: PinnedUrl }> {
  const early = endpointUrlProblem(url, allowPrivate);
  if (early) return { problem: early };
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(host)) return { pinned: { url, address: host } };
  let addresses: { address: string }[];
  try {
    addresses = await resolveHost(host);
  } catch {
    return { problem: `${host} does not resolve` };
  }
  if (addresses.length === 0) return { problem: `${host} does not resolve` };
  if (!allowPrivate) {
    for (const { address } of addresses) {
      const blocked = blockedAddress(address);
      if (blocked) return { problem: `${host} resolves to ${blocked}` };
    }
  }
  return { pinned: { url, address: addresses[0]!.address } };
}

/** The URL's problem once its host is resolved, or null (endpoint creation and changes). */
export async function resolvedUrlProblem(url: string, allowPrivate: boolean, resolveHost: Lookup = systemLookup): Promise<string | null> {
  const checked = await pinnedUrl(url, allowPrivate, resolveHost);
  return "problem" in checked ? checked.problem : null;
}

/**
 * The request of a pinned URL: the connection goes to the checked address (a DNS answer that
 * changed since, rebinding, is never asked for), with the name in `Host` and, over https, as
 * the TLS server name, the certificate still verified for the name.
 */
export function pinnedRequest(pinned: PinnedUrl, init: RequestInit): [string, RequestInit] {
  const target = new URL(pinned.url);
  const host = target.host;
  const name = target.hostname.replace(/^\[|\]$/g, "");
  if (name === pinned.address) return [pinned.url, init];
  target.hostname = pinned.address.includes(":") ? `[${pinned.address}]` : pinned.address;
  const headers = new Headers(init.headers);
  headers.set("Host", host);
  const tls = target.protocol === "https:" ? { tls: { serverName: name, checkServerIdentity: (_: string, cert: PeerCertificate) => checkServerIdentity(name, cert) } } : {};
  return [target.toString(), { ...init, headers, ...tls }];
}
