"""net.dns: NXDOMAIN from the canary resolver is reached (the query name carries the nonce); a
refusal on loopback and a sandbox's own network namespace are blocked; no server, no query (the
system resolver is never asked from a test)."""
import socket
import unittest

from probe_testing import (ProbeTestCase, UntargetedAndRefusedTests, dns_canary, run_in_bwrap,
                           run_probe)


class DnsProbeTest(UntargetedAndRefusedTests, ProbeTestCase):
    PROBE = "net.dns"
    TARGET_KEY = "server"
    KIND = socket.SOCK_DGRAM

    def test_dns_nxdomain_from_the_canary_is_reached(self):
        c = self.canary(dns_canary())
        run = run_probe("net.dns", {"server": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["rcode"], r["qname_echoed"]),
                         ("reached", "positive", "NXDOMAIN", True))
        self.assertEqual(c.hits, ["%s.%s.sandprobe.test" % (run.invocation, run.nonce)])

    def test_dns_is_blocked(self):
        c = self.canary(dns_canary())
        r = run_in_bwrap("net.dns", {"server": c.target, "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("blocked", "positive"))
        self.assertEqual(c.hits, [])


if __name__ == "__main__":
    unittest.main()
