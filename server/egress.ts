// The egress policy of every outbound call the server makes on a project's behalf (judge models,
// and any endpoint a project registers). A project names a URL; it must not be able to reach the
// machine's own services, the private network or a cloud metadata service through us. The check
// runs on the address a connection is actually opened to, for every new connection (redirects
// open new ones), after DNS: a name that resolves to 127.0.0.1 is refused like 127.0.0.1.

import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { Agent, buildConnector } from "undici";

/** Addresses refused unless the operator allows them (GRADEBOX_EGRESS_ALLOW). */
const DENIED: Array<[string, number, "ipv4" | "ipv6"]> = [
  ["0.0.0.0", 8, "ipv4"], // "this network"; 0.0.0.0 reaches the local host
  ["10.0.0.0", 8, "ipv4"],
  ["100.64.0.0", 10, "ipv4"], // carrier-grade NAT
  ["127.0.0.0", 8, "ipv4"],
  ["169.254.0.0", 16, "ipv4"], // link-local, 169.254.169.254 (cloud metadata) included
  ["172.16.0.0", 12, "ipv4"],
  ["192.0.0.0", 24, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["224.0.0.0", 4, "ipv4"], // multicast
  ["240.0.0.0", 4, "ipv4"], // reserved, broadcast
  ["::", 128, "ipv6"],
  ["::1", 128, "ipv6"],
  ["64:ff9b::", 96, "ipv6"], // NAT64 maps IPv4 addresses, private ones included
  ["fc00::", 7, "ipv6"], // unique local (fd00:ec2::254 is a metadata address)
  ["fe80::", 10, "ipv6"],
  ["ff00::", 8, "ipv6"],
];

export class EgressDeniedError extends Error {
  override name = "EgressDeniedError";
  readonly code = "EGRESS_DENIED";
}

export interface EgressPolicy {
  /** The address to connect to for `host`; rejects with EgressDeniedError when the policy refuses it. */
  resolve(host: string): Promise<{ address: string; family: 4 | 6 }>;
  /** What the policy lets through, for messages. */
  describe(): string;
}

/** An IPv4 address written as IPv6 (::ffff:127.0.0.1) is checked as the IPv4 address it is. */
function unmap(address: string): { address: string; family: 4 | 6 } {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { address: mapped[1], family: 4 };
  return { address, family: isIP(address) === 6 ? 6 : 4 };
}

/**
 * `allow` is GRADEBOX_EGRESS_ALLOW: comma-separated host names (`models.internal`, `*.corp.example`)
 * and CIDRs (`10.1.0.0/16`, `127.0.0.1/32`, `fd00::/8`). A host that matches a name is allowed
 * whatever it resolves to; otherwise every address it resolves to must be public or in a CIDR.
 */
export function egressPolicy(allow = ""): EgressPolicy {
  const denied = new BlockList();
  for (const [net, prefix, type] of DENIED) denied.addSubnet(net, prefix, type);
  const allowed = new BlockList();
  const hosts: string[] = [];
  for (const raw of allow.split(",")) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    const cidr = /^([^/]+)\/(\d{1,3})$/.exec(entry);
    if (cidr && isIP(cidr[1])) {
      const type = isIP(cidr[1]) === 4 ? "ipv4" : "ipv6";
      const prefix = Number(cidr[2]);
      if (prefix > (type === "ipv4" ? 32 : 128)) throw new Error(`${entry} has a prefix longer than the address`);
      allowed.addSubnet(cidr[1], prefix, type);
    } else if (isIP(entry)) {
      allowed.addAddress(entry, isIP(entry) === 4 ? "ipv4" : "ipv6");
    } else if (/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(entry)) {
      hosts.push(entry);
    } else {
      throw new Error(`"${entry}" is neither a host name (a.example, *.example) nor a CIDR (10.0.0.0/8)`);
    }
  }
  const hostAllowed = (host: string) =>
    hosts.some((h) => (h.startsWith("*.") ? host.endsWith(h.slice(1)) && host.length > h.length - 1 : host === h));
  const addressAllowed = (address: string, family: 4 | 6) => {
    const type = family === 4 ? "ipv4" : "ipv6";
    return allowed.check(address, type) || !denied.check(address, type);
  };

  return {
    async resolve(rawHost) {
      const host = rawHost.replace(/^\[|\]$/g, "").toLowerCase();
      if (isIP(host)) {
        const ip = unmap(host);
        if (!hostAllowed(host) && !addressAllowed(ip.address, ip.family)) {
          throw new EgressDeniedError(
            `${host} is a loopback, private, link-local or metadata address; the operator can allow it with GRADEBOX_EGRESS_ALLOW`,
          );
        }
        return { address: host, family: isIP(host) === 6 ? 6 : 4 };
      }
      const addresses = await lookup(host, { all: true, verbatim: true });
      if (addresses.length === 0) throw new Error(`${host} resolves to no address`);
      if (!hostAllowed(host)) {
        for (const a of addresses) {
          const ip = unmap(a.address);
          if (!addressAllowed(ip.address, ip.family)) {
            throw new EgressDeniedError(
              `${host} resolves to ${a.address}, a loopback, private, link-local or metadata address; ` +
                "the operator can allow it with GRADEBOX_EGRESS_ALLOW",
            );
          }
        }
      }
      const first = addresses[0];
      return { address: first.address, family: first.family === 6 ? 6 : 4 };
    },
    describe() {
      return allow.trim() ? `public addresses, and ${allow.trim()}` : "public addresses only";
    },
  };
}

/**
 * An undici dispatcher whose every new connection goes to an address the policy allowed, and to
 * that very address (the name is resolved once, here: a second lookup could answer differently).
 */
export function egressAgent(policy: EgressPolicy, options: { connectTimeoutMs?: number; maxResponseSize?: number } = {}): Agent {
  const connector = buildConnector({ timeout: options.connectTimeoutMs ?? 10_000 });
  return new Agent({
    // a body past it fails the request (UND_ERR_RES_EXCEEDED_MAX_SIZE): a reply is never read whole first
    ...(options.maxResponseSize ? { maxResponseSize: options.maxResponseSize } : {}),
    connect(opts, callback) {
      const host = opts.hostname;
      policy.resolve(host).then(
        ({ address }) => {
          const servername = opts.servername ?? (isIP(host.replace(/^\[|\]$/g, "")) ? undefined : host);
          connector({ ...opts, hostname: address, ...(servername ? { servername } : {}) }, callback);
        },
        (error: Error) => callback(error, null),
      );
    },
  });
}

/** Whether an error (or any error in its cause chain) is an egress refusal. */
export function egressDenial(error: unknown): EgressDeniedError | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof EgressDeniedError) return e;
  }
  return undefined;
}
