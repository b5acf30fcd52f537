"""net.metadata-ipv6: the IMDSv2 sequence over IPv6 to a canary on ::1; whether the target is an
IPv6 literal is said in every step; no target (no IPv6 canary on the host), no traffic."""
import unittest

from probe_testing import MetadataShapeTests, ProbeTestCase, http_canary, run_probe


class Ipv6ProbeTest(MetadataShapeTests, ProbeTestCase):
    PROBE = "net.metadata-ipv6"
    BIND = "::1"
    STEPS = [("get-without-token", 401), ("token", 200), ("get-with-token", 200)]

    def check_shape(self, r):
        self.assertTrue(all(s["ipv6_literal"] is True for s in r["steps"]), r["steps"])

    def test_an_ipv4_target_is_said(self):
        c = self.canary(http_canary())
        r = run_probe(self.PROBE, {"target": c.target, "timeout_s": 2}).result
        self.assertEqual(r["outcome"], "reached")
        self.assertTrue(all(s["ipv6_literal"] is False for s in r["steps"]), r["steps"])


if __name__ == "__main__":
    unittest.main()
