import { BlockList, isIP } from 'node:net';
import { invalid } from '../errors.js';

/**
 * Addresses a callback must never reach in production: loopback, private, link-local (which holds
 * the cloud metadata address 169.254.169.254), carrier-grade NAT, unique-local, multicast,
 * reserved, and the IPv4-mapped/translated forms of all of those.
 */
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 96], // IPv4-compatible (deprecated) forms, ::1 included
  ['100::', 64], // discard-only
  ['2002::', 16], // 6to4: carries an IPv4 address
  ['2001::', 23], // IETF protocol assignments: Teredo, benchmarking, ORCHID and the like
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['64:ff9b:1::', 48], // local-use NAT64: can carry a private IPv4 address
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['64:ff9b::', 96],
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) IPv6 address, if it is one. */
function mappedIpv4(ip: string): string | null {
  const m = /^::ffff:(?:0:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m?.[1]) return m[1];
  const hex = /^::ffff:(?:0:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (hex?.[1] && hex[2]) {
    const hi = Number.parseInt(hex[1], 16);
    const lo = Number.parseInt(hex[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return null;
}

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

export function isLoopbackAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return loopback.check(ip, 'ipv4');
  const v4 = family === 6 ? mappedIpv4(ip) : null;
  return v4 ? loopback.check(v4, 'ipv4') : family === 6 && loopback.check(ip, 'ipv6');
}

/**
 * May a callback be sent to this address? Production: public addresses only. The sandbox adds
 * loopback, so a merchant can receive on its own machine, and nothing else: a sandbox reachable
 * from the internet must not become a way into the operator's private network or cloud metadata.
 */
export function isAllowedAddress(ip: string, env: 'sandbox' | 'production'): boolean {
  return isPublicAddress(ip) || (env === 'sandbox' && isLoopbackAddress(ip));
}

export function isPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return !blocked.check(ip, 'ipv4');
  if (family === 6) {
    const v4 = mappedIpv4(ip);
    if (v4) return !blocked.check(v4, 'ipv4');
    return !blocked.check(ip, 'ipv6');
  }
  return false;
}

/**
 * Checks a callback URL when it is registered. In production it must be https and must not name a
 * non-public address or a local name; the address a name resolves to is checked again at connect
 * time, when the callback is delivered. The sandbox also allows http and loopback receivers, so a
 * merchant can test on its own machine, but no other non-public address.
 */
export function checkCallbackUrl(field: string, url: string, env: 'sandbox' | 'production'): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid(field, 'must be an absolute https URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw invalid(field, 'must be an http(s) URL');
  if (parsed.username || parsed.password) throw invalid(field, 'must not carry credentials');
  if (url.length > 2048) throw invalid(field, 'must be at most 2048 characters');
  // A trailing dot names the same host (`localhost.`, `metadata.google.internal.`): checked without it.
  const host = parsed.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (env === 'production') {
    if (parsed.protocol !== 'https:') throw invalid(field, 'must be https in production');
    if (isIP(host) ? !isPublicAddress(host) : /(^|\.)(localhost|local|internal|localdomain)$/i.test(host) || !host.includes('.')) {
      throw invalid(field, 'must name a public host in production');
    }
  } else if (isIP(host) && !isAllowedAddress(host, 'sandbox')) {
    throw invalid(field, 'must name a public or loopback host (the sandbox allows 127.0.0.1 and ::1 for local testing)');
  }
  return parsed.toString();
}
