"""net.live-change: a new connection per try for the whole window, each try's time and answer
reported; the canary logs one hit per answered try; the probe judges nothing itself (outcome
sent: the canary's log and the driver's change decide)."""
import time
import unittest

from probe_testing import ProbeTestCase, free_port, run_probe, tcp_canary


class LiveChangeProbeTest(ProbeTestCase):
    def test_every_try_is_a_new_connection_the_canary_logs(self):
        echo = self.canary(tcp_canary())
        r = run_probe("net.live-change", {"target": echo.target, "window_s": 1,
                                          "interval_s": 0.2}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("sent", "absence"), r)
        self.assertGreaterEqual(len(r["tries"]), 4)
        self.assertEqual({t[1] for t in r["tries"]}, {"ok"})
        self.assertEqual(r["answered"], len(r["tries"]))
        self.assertEqual(len(echo.hits), len(r["tries"]))  # one connection, one line, per try
        self.assertLess(r["tries"][-1][0], 1000)
        self.assertEqual(r["last_try_unix_ms"] - r["first_try_unix_ms"], r["tries"][-1][0])
        self.assertIsNone(r["first_not_answered_ms"])

    def test_refused_tries_are_reported_not_judged(self):
        r = run_probe("net.live-change", {"target": "127.0.0.1:%d" % free_port(),
                                          "window_s": 0.5, "interval_s": 0.2}).result
        self.assertEqual(r["outcome"], "sent", r)
        self.assertEqual(r["answered"], 0)
        self.assertEqual(r["first_not_answered_ms"], r["tries"][0][0])
        self.assertEqual({t[1] for t in r["tries"]}, {"ECONNREFUSED"})

    def test_no_target_sends_nothing(self):
        for target in ("", "{canary.cluster.tcp}"):  # blank, or a placeholder nobody filled
            r = run_probe("net.live-change", {"target": target}).result
            self.assertEqual(r["outcome"], "no_target", r)

    def test_the_window_bounds_the_run_whatever_the_interval(self):
        echo = self.canary(tcp_canary())
        t0 = time.monotonic()
        r = run_probe("net.live-change", {"target": echo.target, "window_s": 1,
                                          "interval_s": 1}).result
        self.assertLess(time.monotonic() - t0, 4)
        self.assertEqual(len(r["tries"]), 1, r)
        for bad in ({"timeout_s": 0}, {"window_s": 1, "interval_s": 5}, {"window_s": 1e9}):
            r = run_probe("net.live-change", dict(bad, target=echo.target)).result
            self.assertEqual((r["outcome"], r["errno"]), ("error", "EINVAL"), bad)


if __name__ == "__main__":
    unittest.main()
