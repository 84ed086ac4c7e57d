// The egress policy of every outbound call the server makes on a project's behalf (judge models,
// and any endpoint a project registers). A project names a URL; it must not be able to reach the
// machine's own services, the private network or a cloud metadata service through us. The check
// runs on the address a connection is actually opened to, for every new connection (redirects
// open new ones), after DNS: a name that resolves to 127.0.0.1 is refused like 127.0.0.1.

import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";

/** Refused IPv4 ranges (IANA's special-purpose registry, the parts not globally reachable). */
const DENIED_V4: Array<[string, string]> = [
  ["0.0.0.0/8", "this network"], // 0.0.0.0 reaches the local host
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "carrier-grade NAT"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local"], // 169.254.169.254, the cloud metadata service, included
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "IETF protocol assignments"],
  ["192.0.2.0/24", "documentation"],
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved"], // 255.255.255.255 (broadcast) included
];

/**
 * Refused IPv6 ranges, checked before the embeddings below. Teredo and NAT64 local-use are refused
 * whole: Teredo tunnels to any IPv4 address (its client's, XORed, and its server's), and the
 * local-use prefix's IPv4 bits depend on the prefix length the network chose.
 */
const DENIED_V6: Array<[string, string]> = [
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["64:ff9b:1::/48", "NAT64 local-use"],
  ["100::/64", "discard"],
  ["2001::/32", "Teredo"],
  ["2001:2::/48", "benchmarking"],
  ["2001:10::/28", "ORCHID"],
  ["2001:20::/28", "ORCHIDv2"],
  ["2001:db8::/32", "documentation"],
  ["3fff::/20", "documentation"],
  ["fc00::/7", "unique local"], // fd00:ec2::254 is a cloud metadata address
  ["fe80::/10", "link-local"],
  ["fec0::/10", "site-local"],
  ["ff00::/8", "multicast"],
];

/**
 * IPv6 forms that carry an IPv4 address, which is checked as that IPv4 address (allow-list
 * included), because the form can reach it: a dual-stack socket connects ::ffff:127.0.0.1 to
 * 127.0.0.1, and a NAT64 gateway, a SIIT translator, a 6to4 relay or an automatic tunnel forwards
 * the others to the IPv4 address.
 */
const EMBEDDINGS: Array<[string, string, (v: bigint) => bigint]> = [
  ["::/96", "IPv4-compatible", (v) => v & 0xffffffffn],
  ["::ffff:0:0/96", "IPv4-mapped", (v) => v & 0xffffffffn],
  ["::ffff:0:0:0/96", "IPv4-translated", (v) => v & 0xffffffffn],
  ["64:ff9b::/96", "NAT64", (v) => v & 0xffffffffn],
  ["2002::/16", "6to4", (v) => (v >> 80n) & 0xffffffffn],
];

/** Everything IANA allocates for unicast; the rest of the IPv6 space is reserved or special. */
const GLOBAL_UNICAST = "2000::/3";

interface Range {
  cidr: string;
  bits: 32 | 128;
  net: bigint;
  prefix: number;
}

function v4Value(address: string): bigint {
  return address.split(".").reduce((v, part) => (v << 8n) | BigInt(Number(part)), 0n);
}

/** `address` is one isIP calls IPv6 (a zone, %eth0, is dropped; a dotted IPv4 tail is two groups). */
function v6Value(address: string): bigint {
  let text = address.replace(/%.*$/, "");
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = v4Value(dotted[1]);
    text = `${text.slice(0, dotted.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.split("::");
  const groups = (part: string | undefined) => (part ? part.split(":") : []);
  const all =
    tail === undefined
      ? groups(head)
      : [...groups(head), ...Array(8 - groups(head).length - groups(tail).length).fill("0"), ...groups(tail)];
  return all.reduce((v, group) => (v << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function formatV4(v: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => (v >> shift) & 0xffn).join(".");
}

/** `cidr` is an address, or an address and a prefix length no longer than the address. */
function range(cidr: string): Range {
  const [address, length] = cidr.split("/");
  const bits = isIP(address) === 4 ? 32 : 128;
  const prefix = length === undefined ? bits : Number(length);
  if (prefix > bits) throw new Error(`${cidr} has a prefix longer than the address`);
  return { cidr, bits, net: bits === 32 ? v4Value(address) : v6Value(address), prefix };
}

function contains(r: Range, bits: 32 | 128, v: bigint): boolean {
  const shift = BigInt(r.bits - r.prefix);
  return r.bits === bits && v >> shift === r.net >> shift;
}

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

const NOT_PUBLIC = "a loopback, private, link-local or metadata address, or another that is not public";

/**
 * `allow` is GRADEBOX_EGRESS_ALLOW: comma-separated host names (`models.internal`, `*.corp.example`)
 * and CIDRs (`10.1.0.0/16`, `127.0.0.1/32`, `fd00::/8`). A host that matches a name is allowed
 * whatever it resolves to; otherwise every address it resolves to must be public or in a CIDR.
 * An IPv4 CIDR also allows its IPv6 embeddings (`127.0.0.1/32` allows ::ffff:127.0.0.1 and
 * 2002:7f00:1::); an IPv6 CIDR matches the IPv6 address as written, so Teredo or NAT64 local-use
 * is let through only by its own IPv6 range (`2001::/32`, `64:ff9b:1::/48`).
 */
/** How the operator allows one refused address: the variable, with the address as its own range. */
const allowHint = (address: string) =>
  `the operator can allow it with GRADEBOX_EGRESS_ALLOW (e.g. GRADEBOX_EGRESS_ALLOW=${address}/${isIP(address) === 6 ? 128 : 32} on the server)`;

export function egressPolicy(allow = ""): EgressPolicy {
  const deniedV4 = DENIED_V4.map(([cidr, why]) => ({ ...range(cidr), why }));
  const deniedV6 = DENIED_V6.map(([cidr, why]) => ({ ...range(cidr), why }));
  const embeddings = EMBEDDINGS.map(([cidr, form, ipv4]) => ({ ...range(cidr), form, ipv4 }));
  const globalUnicast = range(GLOBAL_UNICAST);
  const allowed: Range[] = [];
  const hosts: string[] = [];
  for (const raw of allow.split(",")) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    const cidr = /^([^/]+)\/(\d{1,3})$/.exec(entry);
    if ((cidr && isIP(cidr[1])) || isIP(entry)) {
      allowed.push(range(entry));
    } else if (/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(entry)) {
      hosts.push(entry);
    } else {
      throw new Error(`"${entry}" is neither a host name (a.example, *.example) nor a CIDR (10.0.0.0/8)`);
    }
  }
  const hostAllowed = (host: string) =>
    hosts.some((h) => (h.startsWith("*.") ? host.endsWith(h.slice(1)) && host.length > h.length - 1 : host === h));

  const refusalV4 = (v: bigint): string | undefined => {
    if (allowed.some((r) => contains(r, 32, v))) return undefined;
    const hit = deniedV4.find((r) => contains(r, 32, v));
    return hit && `${hit.cidr} ${hit.why}`;
  };
  const refusalV6 = (v: bigint): string | undefined => {
    if (allowed.some((r) => contains(r, 128, v))) return undefined;
    const hit = deniedV6.find((r) => contains(r, 128, v));
    if (hit) return `${hit.cidr} ${hit.why}`;
    const embedding = embeddings.find((r) => contains(r, 128, v));
    if (embedding) {
      const ipv4 = embedding.ipv4(v);
      const why = refusalV4(ipv4);
      return why && `${embedding.form} ${embedding.cidr} of ${formatV4(ipv4)}: ${why}`;
    }
    return contains(globalUnicast, 128, v) ? undefined : `outside ${GLOBAL_UNICAST}, global unicast`;
  };
  /** Why an IP address is refused (`127.0.0.0/8 loopback`), or undefined when it is allowed. */
  const refusal = (address: string): string | undefined => {
    const family = isIP(address);
    if (family === 4) return refusalV4(v4Value(address));
    if (family === 6) return refusalV6(v6Value(address));
    throw new Error(`${address} is not an IP address`);
  };

  return {
    async resolve(rawHost) {
      const host = rawHost.replace(/^\[|\]$/g, "").toLowerCase();
      if (isIP(host)) {
        const why = hostAllowed(host) ? undefined : refusal(host);
        if (why) throw new EgressDeniedError(`${host} is ${NOT_PUBLIC} (${why}); ${allowHint(host)}`);
        return { address: host, family: isIP(host) === 6 ? 6 : 4 };
      }
      const addresses = await lookup(host, { all: true, verbatim: true });
      if (addresses.length === 0) throw new Error(`${host} resolves to no address`);
      if (!hostAllowed(host)) {
        for (const a of addresses) {
          const why = refusal(a.address);
          if (why) {
            throw new EgressDeniedError(`${host} resolves to ${a.address}, ${NOT_PUBLIC} (${why}); ${allowHint(a.address)}`);
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
