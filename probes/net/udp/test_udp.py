"""net.udp: only the canary's echo is reached; a foreign reply is not; silence and refusals are
blocked; an IP target only (no lookup); no target, no traffic."""
import socket
import time
import unittest

from probe_testing import ProbeTestCase, UntargetedAndRefusedTests, run_probe, udp_canary


class UdpProbeTest(UntargetedAndRefusedTests, ProbeTestCase):
    PROBE = "net.udp"
    KIND = socket.SOCK_DGRAM

    def test_udp_echo_reached(self):
        c = self.canary(udp_canary())
        run = run_probe("net.udp", {"target": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_echo"], r["replies"]),
                         ("reached", "positive", True, 1))
        self.assertEqual(c.hits, ["SANDPROBE %s %s" % (run.nonce, run.invocation)])
        self.assertEqual(run.records[0]["kind"], "start")

    def test_udp_reply_without_the_nonce_is_unknown(self):
        c = self.canary(udp_canary("foreign"))
        run = run_probe("net.udp", {"target": c.target, "timeout_s": 1})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["replies"], r["foreign_replies"]),
                         ("no_echo", "absence", 1, 1))
        self.assertEqual(len(c.hits), 1)

    def test_udp_silence_is_blocked_by_absence(self):
        c = self.canary(udp_canary("silent"))
        started = time.monotonic()
        r = run_probe("net.udp", {"target": c.target, "timeout_s": 1}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["replies"]),
                         ("blocked", "absence", "TimeoutError", 0))
        self.assertGreaterEqual(time.monotonic() - started, 1)
        self.assertEqual(len(c.hits), 1)

    def test_udp_needs_an_ip_target(self):
        # No name lookup: a name is an error, and nothing is sent (the resolver is never asked).
        r = run_probe("net.udp", {"target": "sandprobe-missing.invalid:7", "timeout_s": 1}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("error", "absence", "EAI_NONAME"))

    def test_udp_blocked_in_own_network_namespace(self):
        # No listener on bwrap's own loopback: ICMP port unreachable -> ECONNREFUSED.
        self.assertBlockedOnlyInBwrap("net.udp", udp_canary())


if __name__ == "__main__":
    unittest.main()
