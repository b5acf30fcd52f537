"""net.dns-resolver: getaddrinfo through the sandbox's own resolv.conf. Every case runs in
bubblewrap with a resolv.conf the test writes: nothing is asked before params.nameservers covers
it; an unreachable resolver is no_resolver (contained); a resolver stub forwarding the zone to a
canary answers NXDOMAIN and the canary logs <invocation>.<nonce>.<zone> (the proof the harness
uses). The host's own resolver is never asked."""
import os
import socket
import struct
import sys
import tempfile
import unittest

from probe_testing import PROBES, ProbeTestCase, dns_canary, run_in_bwrap

sys.path.insert(0, os.path.join(os.path.dirname(PROBES), "harness", "testing"))
from resolver_stub import ResolverStub  # noqa: E402

STUB = "127.53.0.2"  # port 53 of a loopback address nothing else uses


class DnsResolverProbeTest(ProbeTestCase):
    def resolv_conf(self, *servers):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, "resolv.conf")
        with open(path, "w") as f:
            f.write("".join("nameserver %s\n" % s for s in servers) + "options timeout:1\n")
        return ["--ro-bind", path, "/etc/resolv.conf"]

    def test_nothing_is_asked_without_nameservers(self):
        r = run_in_bwrap("net.dns-resolver", {}, self.resolv_conf("127.0.0.1")).result
        self.assertEqual((r["outcome"], r["nameservers"]), ("no_target", ["127.0.0.1"]))

    def test_a_resolver_outside_the_allow_list_is_not_asked(self):
        c = self.canary(dns_canary())
        r = run_in_bwrap("net.dns-resolver", {"nameservers": "127.0.0.0/8"},
                         self.resolv_conf("127.0.0.1", "192.0.2.53")).result
        self.assertEqual(r["outcome"], "not_queried")
        self.assertIn("192.0.2.53", r["detail"])
        self.assertEqual(c.hits, [])

    def test_an_unreachable_resolver_is_contained_over_udp_and_tcp(self):
        for transport in ("udp", "tcp"):
            r = run_in_bwrap("net.dns-resolver", {"nameservers": "127.0.0.1", "transport":
                                                  transport, "timeout_s": 5},
                             self.resolv_conf("127.0.0.1")).result
            self.assertEqual((r["outcome"], r["errno"], r["transport"]),
                             ("no_resolver", "EAI_AGAIN", transport))

    def test_bad_transport_is_an_error(self):
        r = run_in_bwrap("net.dns-resolver", {"nameservers": "any", "transport": "quic"},
                         self.resolv_conf("127.0.0.1")).result
        self.assertEqual(r["outcome"], "error")

    def test_a_forwarding_resolver_reaches_the_canary(self):
        c = self.canary(dns_canary())
        host, port = c.target.rsplit(":", 1)
        stub = ResolverStub(STUB, "z.sandprobe.test", (host, int(port)))
        self.addCleanup(stub.close)
        run = run_in_bwrap("net.dns-resolver", {"nameservers": STUB, "zone": "z.sandprobe.test",
                                                "timeout_s": 5},
                           ["--share-net"] + self.resolv_conf(STUB))
        self.assertEqual((run.result["outcome"], run.result["errno"]), ("nxdomain", "EAI_NONAME"))
        want = "%s.%s.z.sandprobe.test" % (run.invocation, run.nonce)
        self.assertTrue(c.hits and set(c.hits) == {want}, c.hits)  # A and AAAA, absolute name
        self.assertEqual(stub.snapshot()["refused"], [])

    def test_the_stub_refuses_every_other_name_and_forwards_nothing(self):
        c = self.canary(dns_canary())
        host, port = c.target.rsplit(":", 1)
        stub = ResolverStub(STUB, "z.sandprobe.test", (host, int(port)))
        self.addCleanup(stub.close)
        for name in (b"example", b"z"):  # example.com. and zxxxxxx.com.: outside the zone
            qname = b"\x07" + name.ljust(7, b"x") + b"\x03com\x00"
            query = struct.pack("!6H", 0x5151, 0x0100, 1, 0, 0, 0) + qname + b"\x00\x01\x00\x01"
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(3)
                s.sendto(query, (STUB, 53))
                reply = s.recv(512)
            self.assertEqual((reply[:2], reply[3] & 0x0F), (b"\x51\x51", 5))  # REFUSED
        self.assertEqual(c.hits, [])
        self.assertEqual(len(stub.snapshot()["refused"]), 2)


if __name__ == "__main__":
    unittest.main()
