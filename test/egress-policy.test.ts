// The egress policy address by address: every refused range of both families with an address
// inside and one just outside, every IPv6 form that carries an IPv4 address, and the allow-list.
// IP literals go through the policy's own check (no DNS); one case goes through the real connector.

import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { describe, test } from "node:test";
import { request } from "undici";
import { EgressDeniedError, egressAgent, egressDenial, egressPolicy } from "../server/egress.ts";

/** The policy's verdict on an IP address: undefined when allowed, else the reason its refusal gives. */
async function verdict(allow: string, address: string): Promise<string | undefined> {
  try {
    await egressPolicy(allow).resolve(address);
    return undefined;
  } catch (error) {
    assert.ok(error instanceof EgressDeniedError, `${address}: ${error}`);
    // the refusal says how to allow this one address
    const range = `${address.replace(/^\[|\]$/g, "").toLowerCase()}/${address.includes(":") ? 128 : 32}`;
    assert.ok(error.message.endsWith(`(e.g. GRADEBOX_EGRESS_ALLOW=${range} on the server)`), error.message);
    return /\((.*)\); the operator/.exec(error.message)?.[1] ?? error.message;
  }
}

/** [address, the range that refuses it (its reason starts with it), or undefined: allowed] */
type Row = [string, string | undefined];

const IPV4: Row[] = [
  ["0.0.0.0", "0.0.0.0/8"],
  ["0.255.255.255", "0.0.0.0/8"],
  ["1.0.0.0", undefined],
  ["10.0.0.1", "10.0.0.0/8"],
  ["10.255.255.255", "10.0.0.0/8"],
  ["9.255.255.255", undefined],
  ["11.0.0.0", undefined],
  ["100.64.0.0", "100.64.0.0/10"],
  ["100.127.255.255", "100.64.0.0/10"],
  ["100.63.255.255", undefined],
  ["100.128.0.0", undefined],
  ["127.0.0.1", "127.0.0.0/8"],
  ["127.255.255.254", "127.0.0.0/8"],
  ["126.255.255.255", undefined],
  ["128.0.0.0", undefined],
  ["169.254.169.254", "169.254.0.0/16"],
  ["169.254.0.0", "169.254.0.0/16"],
  ["169.253.255.255", undefined],
  ["169.255.0.0", undefined],
  ["172.16.0.0", "172.16.0.0/12"],
  ["172.31.255.255", "172.16.0.0/12"],
  ["172.15.255.255", undefined],
  ["172.32.0.0", undefined],
  ["192.0.0.8", "192.0.0.0/24"],
  ["191.255.255.255", undefined],
  ["192.0.1.0", undefined],
  ["192.0.2.1", "192.0.2.0/24"],
  ["192.0.3.0", undefined],
  ["192.168.1.1", "192.168.0.0/16"],
  ["192.167.255.255", undefined],
  ["192.169.0.0", undefined],
  ["198.18.0.1", "198.18.0.0/15"],
  ["198.19.255.255", "198.18.0.0/15"],
  ["198.17.255.255", undefined],
  ["198.20.0.0", undefined],
  ["198.51.100.1", "198.51.100.0/24"],
  ["198.51.99.255", undefined],
  ["198.51.101.0", undefined],
  ["203.0.113.1", "203.0.113.0/24"],
  ["203.0.112.255", undefined],
  ["203.0.114.0", undefined],
  ["224.0.0.1", "224.0.0.0/4"],
  ["239.255.255.255", "224.0.0.0/4"],
  ["223.255.255.255", undefined],
  // reserved 240/4 runs to the end of the space (just below it is multicast, above)
  ["240.0.0.1", "240.0.0.0/4"],
  ["255.255.255.255", "240.0.0.0/4"],
  ["8.8.8.8", undefined],
];

const IPV6: Row[] = [
  ["::", "::/128"],
  ["::1", "::1/128"],
  ["64:ff9b:1::a9fe:a9fe", "64:ff9b:1::/48"],
  ["64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b:1::/48"],
  ["64:ff9b:2::", "outside 2000::/3"],
  ["100::1", "100::/64"],
  ["100::ffff:ffff:ffff:ffff", "100::/64"],
  ["100:0:0:1::", "outside 2000::/3"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::/32"], // RFC 4380's example: server 65.54.227.120, client 192.0.2.45
  ["2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "2001::/32"],
  ["2001:1::1", undefined], // PCP anycast, globally reachable
  ["2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", undefined],
  ["2001:2::1", "2001:2::/48"],
  ["2001:2:0:ffff::1", "2001:2::/48"],
  ["2001:2:1::", undefined],
  ["2001:3::1", undefined], // AMT, globally reachable
  ["2001:10::1", "2001:10::/28"],
  ["2001:1f:ffff::1", "2001:10::/28"],
  ["2001:f:ffff::1", undefined],
  ["2001:20::1", "2001:20::/28"],
  ["2001:2f:ffff::1", "2001:20::/28"],
  ["2001:30::", undefined],
  ["2001:db8::1", "2001:db8::/32"],
  ["2001:db8:ffff::1", "2001:db8::/32"],
  ["2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", undefined],
  ["2001:db9::", undefined],
  ["3fff::1", "3fff::/20"],
  ["3fff:fff:ffff::1", "3fff::/20"],
  ["3fff:1000::", undefined],
  ["fc00::1", "fc00::/7"],
  ["fd00:ec2::254", "fc00::/7"],
  ["fbff:ffff::1", "outside 2000::/3"],
  ["fe00::", "outside 2000::/3"],
  ["fe80::1", "fe80::/10"],
  ["fe80::1%eth0", "fe80::/10"],
  ["febf:ffff::1", "fe80::/10"],
  ["fe7f:ffff::1", "outside 2000::/3"],
  ["fec0::1", "fec0::/10"],
  ["feff:ffff::1", "fec0::/10"],
  ["ff00::", "ff00::/8"],
  ["ff02::1", "ff00::/8"],
  ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ff00::/8"],
  // global unicast is 2000::/3; the rest (5f00::/16 SRv6 included) is reserved or special
  ["1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "outside 2000::/3"],
  ["2000::", undefined],
  ["3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", undefined],
  ["4000::", "outside 2000::/3"],
  ["5f00::1", "outside 2000::/3"],
  ["2001:4860:4860::8888", undefined],
  ["2606:4700:4700::1111", undefined],
];

const hex = (ipv4: string) => {
  const [a, b, c, d] = ipv4.split(".").map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
};
const xor = (ipv4: string) => hex(ipv4.replace(/\d+/g, (octet) => String(255 - Number(octet))));

/** Each IPv6 form that carries an IPv4 address, and the range that refuses it whole (if any). */
const FORMS: Array<{ form: string; whole?: string; write: (ipv4: string) => string[] }> = [
  { form: "IPv4-compatible ::/96", write: (v) => [`::${hex(v).join(":")}`, `::${v}`] },
  { form: "IPv4-mapped ::ffff:0:0/96", write: (v) => [`::ffff:${hex(v).join(":")}`, `::ffff:${v}`, `0:0:0:0:0:ffff:${v}`] },
  { form: "IPv4-translated ::ffff:0:0:0/96", write: (v) => [`::ffff:0:${hex(v).join(":")}`, `::ffff:0:${v}`] },
  { form: "NAT64 64:ff9b::/96", write: (v) => [`64:ff9b::${hex(v).join(":")}`, `64:ff9b::${v}`] },
  { form: "6to4 2002::/16", write: (v) => [`2002:${hex(v).join(":")}::1`, `2002:${hex(v).join(":")}:ffff:ffff:ffff:ffff:ffff`] },
  {
    form: "NAT64 local-use",
    whole: "64:ff9b:1::/48",
    // RFC 6052 with a /48 prefix: the IPv4 address is split around bits 64–71; with a /96, at the end
    write: (v) => {
      const [a, b, c, d] = v.split(".").map(Number);
      return [`64:ff9b:1:${((a << 8) | b).toString(16)}:${c.toString(16)}:${(d << 8).toString(16)}::`, `64:ff9b:1::${hex(v).join(":")}`];
    },
  },
  {
    form: "Teredo",
    whole: "2001::/32",
    // server in bits 32–63, client XORed in the last 32 bits: both forms carry the IPv4 address
    write: (v) => [`2001:0:${hex(v).join(":")}:0:0:${xor("8.8.8.8").join(":")}`, `2001:0:808:808:8000:0:${xor(v).join(":")}`],
  },
];

describe("the egress policy", () => {
  test("IPv4: each refused range refuses an address inside and lets the public one just outside through", async () => {
    for (const [address, refusedBy] of IPV4) {
      const why = await verdict("", address);
      if (refusedBy === undefined) assert.equal(why, undefined, `${address} is public`);
      else assert.ok(why?.startsWith(`${refusedBy} `), `${address}: refused by ${refusedBy}, not: ${why}`);
    }
  });

  test("IPv6: each refused range refuses an address inside; just outside is public or refused by its neighbour", async () => {
    for (const [address, refusedBy] of IPV6) {
      const why = await verdict("", address);
      if (refusedBy === undefined) assert.equal(why, undefined, `${address} is public`);
      else assert.ok(why?.startsWith(refusedBy), `${address}: refused by ${refusedBy}, not: ${why}`);
    }
  });

  test("an IPv6 form carrying 127.0.0.1, 10.0.0.1 or 169.254.169.254 is refused; carrying 8.8.8.8, only the tunnels refused whole are", async () => {
    for (const { form, whole, write } of FORMS) {
      for (const ipv4 of ["127.0.0.1", "10.0.0.1", "169.254.169.254"]) {
        for (const address of write(ipv4)) {
          const why = await verdict("", address);
          if (whole) assert.ok(why?.startsWith(whole), `${address} (${form} of ${ipv4}): ${why}`);
          else assert.ok(why?.startsWith(`${form} of ${ipv4}: `), `${address} (${form} of ${ipv4}): ${why}`);
        }
      }
      for (const address of write("8.8.8.8")) {
        const why = await verdict("", address);
        if (whole) assert.ok(why?.startsWith(whole), `${address} (${form} of 8.8.8.8): ${why}`);
        else assert.equal(why, undefined, `${address} (${form} of 8.8.8.8)`);
      }
    }
  });

  test("GRADEBOX_EGRESS_ALLOW: an allowed IPv4 range allows its IPv6 forms, except the tunnels refused whole, which only their own IPv6 range allows", async () => {
    const allow = "127.0.0.1/32";
    assert.equal(await verdict(allow, "127.0.0.1"), undefined);
    assert.match((await verdict(allow, "127.0.0.2")) ?? "", /^127\.0\.0\.0\/8 loopback/);
    assert.match((await verdict(allow, "10.0.0.1")) ?? "", /^10\.0\.0\.0\/8/);
    for (const { form, whole, write } of FORMS) {
      for (const address of write("127.0.0.1")) {
        const why = await verdict(allow, address);
        if (whole) assert.ok(why?.startsWith(whole), `${address} (${form})`);
        else assert.equal(why, undefined, `${address} (${form}) carries the allowed 127.0.0.1`);
      }
      for (const address of write("127.0.0.2")) assert.notEqual(await verdict(allow, address), undefined, `${address} (${form})`);
    }
    // ::1 is IPv6's loopback, not a form of 127.0.0.1
    assert.match((await verdict(allow, "::1")) ?? "", /^::1\/128/);

    const tunnels = "2001::/32,64:ff9b:1::/48";
    for (const { whole, write } of FORMS.filter((f) => f.whole)) {
      for (const address of write("127.0.0.1")) assert.equal(await verdict(tunnels, address), undefined, `${address} (allowed ${whole})`);
    }
    assert.match((await verdict(tunnels, "2002:7f00:1::1")) ?? "", /^6to4/);

    assert.equal(await verdict("fd00::/8", "fd00:ec2::254"), undefined);
    assert.match((await verdict("fd00::/8", "fc00::1")) ?? "", /^fc00::\/7/);
    assert.equal(await verdict("10.0.0.0/8", "::ffff:10.200.0.1"), undefined);
    assert.match(
      (await verdict("10.0.0.0/8", "::ffff:172.16.0.1")) ?? "",
      /^IPv4-mapped ::ffff:0:0\/96 of 172\.16\.0\.1: 172\.16\.0\.0\/12/,
    );
  });

  test("an allow-list entry that is neither a host name nor a CIDR, or a prefix past the address, is refused at start", () => {
    for (const bad of ["10.0.0.0/33", "::/129", "not a host", "http://x"])
      assert.throws(() => egressPolicy(bad), /prefix longer than the address|neither a host name/, bad);
  });

  test("through the real connector: a refused form opens no connection; an allowed IPv4 reaches its listener through its IPv4-mapped form", async () => {
    let requests = 0;
    const server = createServer((_req, res) => {
      requests++;
      res.end("ok");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as { port: number };
    const strict = egressAgent(egressPolicy(""), { connectTimeoutMs: 2000 });
    const loopback = egressAgent(egressPolicy("127.0.0.1/32"), { connectTimeoutMs: 2000 });
    try {
      for (const host of ["[::ffff:0:7f00:1]", "[::7f00:1]", "[2002:7f00:1::1]", "[::ffff:7f00:1]"]) {
        const error = await request(`http://${host}:${port}/`, { dispatcher: strict }).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(egressDenial(error), `${host}: ${error}`);
      }
      assert.equal(requests, 0);
      const r = await request(`http://[::ffff:7f00:1]:${port}/`, { dispatcher: loopback });
      assert.equal(r.statusCode, 200);
      assert.equal(await r.body.text(), "ok");
      assert.equal(requests, 1, "the IPv4-mapped form reaches the IPv4 listener: why it is checked as 127.0.0.1");
    } finally {
      await Promise.all([strict.close(), loopback.close()]);
      server.close();
    }
  });
});
