import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

/** An entry of TRUSTED_PROXIES: a CIDR (`10.0.0.0/8`, `fd00::/8`) or one address. Throws when it is neither. */
export function parseTrustedProxy(entry: string): Range {
  if (ipaddr.isValidCIDR(entry)) return ipaddr.parseCIDR(entry);
  const address = ipaddr.parse(entry);
  return [address, address.kind() === "ipv4" ? 32 : 128];
}

/** An address as one spelling (`::ffff:10.0.0.1` is `10.0.0.1`), or null when it is not an address. */
function parseAddress(text: string): Address | null {
  return ipaddr.isValid(text) ? ipaddr.process(text) : null;
}

/** Whether an address (a socket's peer, a hop of X-Forwarded-For) is one of TRUSTED_PROXIES, whose forwarded headers are believed. */
export function createTrustedPeer(trustedProxies: readonly string[]): (address: string) => boolean {
  const ranges = trustedProxies.map(parseTrustedProxy);
  return (text) => {
    const address = parseAddress(text);
    return address !== null && ranges.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits));
  };
}

/**
 * The client address of a request, for the failed-authentication throttle: the socket's
 * peer, or, only when that peer is a trusted proxy, the first address of X-Forwarded-For
 * that is not trusted, walking from the right (each proxy appends the address it saw).
 */
export function createClientAddress(trustedProxies: readonly string[]): (peer: string, forwardedFor: string | null) => string {
  const trusted = createTrustedPeer(trustedProxies);
  const spelled = (text: string) => parseAddress(text)?.toString() ?? text;

  return (peer, forwardedFor) => {
    if (trustedProxies.length === 0 || !forwardedFor || !trusted(peer)) return peer;
    const hops = forwardedFor.split(",").map((hop) => hop.trim());
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      // Whatever is not a trusted address (garbage included) is the client as far as we can tell.
      if (!trusted(hop)) return spelled(hop).slice(0, 64);
    }
    return spelled(hops[0]!);
  };
}
