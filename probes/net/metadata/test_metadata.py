"""net.metadata: the canary proves a visit server-side; any HTTP answer is reached; a refusal
on loopback is blocked; no target, no traffic."""
import unittest

from probe_testing import ProbeTestCase, UntargetedAndRefusedTests, http_canary, run_probe


class MetadataProbeTest(UntargetedAndRefusedTests, ProbeTestCase):
    PROBE = "net.metadata"

    def test_metadata_reaches_canary_and_proves_it_server_side(self):
        # The canary speaks IMDSv2: a GET without a token is 401, and any status is reached.
        c = self.canary(http_canary())
        run = run_probe("net.metadata", {"target": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["status"], r["canary_nonce_seen"]),
                         ("reached", "positive", 401, True))
        self.assertEqual(c.hits, ["%s %s" % (run.nonce, run.invocation)])
        self.assertEqual(run.records[0]["kind"], "start")

    def test_metadata_any_status_from_a_real_server_is_reached(self):
        c = self.canary(http_canary(canary=False))
        r = run_probe("net.metadata", {"target": c.target, "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["status"], r["canary_nonce_seen"]),
                         ("reached", 404, False))


if __name__ == "__main__":
    unittest.main()
