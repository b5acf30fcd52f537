"""net.tcp-by-ip: only the canary's echo is reached; connect() alone is not; a refusal on
loopback, or in a sandbox's own network namespace, is blocked."""
import unittest

from probe_testing import ProbeTestCase, run_probe, tcp_canary


class TcpByIpProbeTest(ProbeTestCase):
    def test_tcp_echo_reached(self):
        c = self.canary(tcp_canary())
        run = run_probe("net.tcp-by-ip", {"target": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_echo"], r["connected"]),
                         ("reached", "positive", True, True))
        self.assertEqual(c.hits, ["SANDPROBE %s %s" % (run.nonce, run.invocation)])

    def test_tcp_connect_without_echo_is_not_reached(self):
        c = self.canary(tcp_canary(echo=False))
        r = run_probe("net.tcp-by-ip", {"target": c.target, "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"], r["connected"], r["reply_bytes"]),
                         ("no_echo", "absence", True, 0))

    def test_refused_on_loopback_is_blocked(self):
        self.assertRefusedOnLoopbackIsBlocked("net.tcp-by-ip", "target")

    def test_tcp_by_ip_is_blocked_although_the_canary_listens(self):
        self.assertBlockedOnlyInBwrap("net.tcp-by-ip", tcp_canary())


if __name__ == "__main__":
    unittest.main()
