"""net.http-by-name: "localhost" (from /etc/hosts) reaches the canary, a refusal is blocked, and
a name that does not resolve in a sandbox's own network namespace is blocked by absence."""
import unittest

from probe_testing import (ProbeTestCase, assert_localhost_is_local, free_port, http_canary,
                           run_in_bwrap, run_probe)


class HttpByNameProbeTest(ProbeTestCase):
    def test_http_by_name_reaches_canary(self):
        assert_localhost_is_local()
        c = self.canary(http_canary())
        run = run_probe("net.http-by-name", {"url": "http://localhost:%d/x?y=1" % c.port,
                                             "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["status"], r["canary_nonce_seen"]),
                         ("reached", 200, True))
        self.assertIn("127.0.0.1", r["addresses"])
        self.assertEqual(r["attempts"][-1]["addr"], "127.0.0.1")
        self.assertEqual(c.hits, ["%s %s" % (run.nonce, run.invocation)])

    def test_refused_on_loopback_is_blocked(self):
        assert_localhost_is_local()
        r = run_probe("net.http-by-name", {"url": "http://localhost:%d/" % free_port(),
                                           "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("blocked", "positive"))
        last = r["attempts"][-1]  # "localhost" may be ::1 first, maybe unusable
        self.assertEqual(last["addr"], "127.0.0.1")
        self.assertEqual(last["errno"], "ECONNREFUSED")

    def test_http_by_name_unresolvable_name_is_blocked(self):
        # In bwrap's own network namespace, so the lookup cannot leave the machine.
        r = run_in_bwrap("net.http-by-name", {"url": "http://sandprobe-missing.invalid/",
                                              "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"], r["detail"]),
                         ("blocked", "absence", "name did not resolve"))
        self.assertTrue(r["errno"].startswith("EAI_"), r["errno"])


if __name__ == "__main__":
    unittest.main()
