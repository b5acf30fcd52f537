"""End-to-end: a run-code service that misbehaves gives clear ERROR / INCONCLUSIVE cells and the
run still completes (exit 2), on the REAL sandprobe binary against the fixture service
(harness/testing/runcode_fixture/fixture.py, unsafe mode) with a fault switched on after the
preflight: hang, garbage JSON, a huge body (read streaming past the driver's cap), and dying
mid-suite.

The rows are selftest probes (e2e_util.make_selftest_home) that PASS through a healthy fixture
(the service does not carry the harness's planted env secret; the local control does), so every
non-PASS cell here is the fault's doing. Traffic: 127.0.0.1 only.
"""
import os
import tempfile
import time
import unittest

import e2e_util as u

SELFTEST = {"one": ("fault one", "result(OUTCOME, 'positive')\n"),
            "two": ("fault two", "result(OUTCOME, 'positive')\n"),
            "three": ("fault three", "result(OUTCOME, 'positive')\n"),
            "four": ("fault four", "result(OUTCOME, 'positive')\n")}
IDS = ["selftest.%s" % n for n in SELFTEST]


def run_faulty(fault, *fixture_args, jobs=2, probes=SELFTEST):
    """One run against a fixture with --fault FAULT -> (result, report, fixture exit, leftovers,
    wall seconds)."""
    with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-http-fault-") as base:
        home, suite, _ = u.make_selftest_home(base, probes)
        fixture = u.Fixture("unsafe", "--timeout", "3", "--fault", fault, *fixture_args, cwd=base)
        try:
            manifest = u.write_http_manifest(os.path.join(base, "faulty.yaml"), "faulty",
                                             fixture.url)
            out = os.path.join(base, "out")
            start = time.monotonic()
            res = u.run_sandprobe(
                ["run", "--home", home, "--suite", suite, "--sandbox", manifest, "--control",
                 u.LOCAL_MANIFEST, "--out", out, "--canary-dir", os.path.join(base, "canary"),
                 "--jobs", str(jobs), "--format", "json"] + u.FAST_FLAGS, timeout=60, cwd=base)
            wall = time.monotonic() - start
            report = u.report_or_none(out)
        finally:
            code = fixture.stop()
        left = u.sandprobe_processes(report["nonce_hash"]) if report else []
    return res, report, code, left, wall


class Faults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()

    def check_completed(self, res, report, left):
        self.assertIsNotNone(report, res.describe())
        self.assertEqual(res.returncode, 2, res.describe())
        self.assertEqual(left, [])
        self.assertEqual(len(u.verdicts(report, "faulty")), len(IDS))

    def test_hang_is_a_deadline_not_a_stuck_run(self):
        res, report, code, left, wall = run_faulty("hang", probes=dict(list(SELFTEST.items())[:3]))
        self.assertIsNotNone(report, res.describe())
        self.assertEqual(res.returncode, 2, res.describe())
        self.assertEqual(left, [])
        for probe, v in u.verdicts(report, "faulty").items():
            self.assertEqual(v["verdict"], "INCONCLUSIVE", (probe, v["reason"]))
            self.assertIn("deadline", v["reason"])
        for o in u.observations(report, "faulty").values():
            self.assertEqual(o["evidence"]["driver_facts"]["ended_by"], "harness deadline")
        self.assertEqual(code, 0)
        self.assertLess(wall, 30)  # 3 probes x a 5 s deadline over 2 workers, plus setup

    def check_every_cell_errors(self, fault, says):
        """A run against `fault` completes, every cell ERROR with `says` in its reason."""
        res, report, code, left, _ = run_faulty(fault)
        self.check_completed(res, report, left)
        for probe, v in u.verdicts(report, "faulty").items():
            self.assertEqual(v["verdict"], "ERROR", probe)
            self.assertIn(says, v["reason"])
        self.assertEqual(code, 0)

    def test_garbage_json_is_an_error_per_cell(self):
        self.check_every_cell_errors("garbage", "not a JSON object")

    def test_huge_body_is_read_streaming_and_counted(self):
        # 64 MiB of 'x' as stdout, past the driver's 16 MiB cap: read streaming, counted, judged
        # like any answer (no result record: INCONCLUSIVE), never an ERROR for its size.
        res, report, code, left, _ = run_faulty("huge")
        self.check_completed(res, report, left)
        for probe, v in u.verdicts(report, "faulty").items():
            self.assertEqual(v["verdict"], "INCONCLUSIVE", (probe, v["reason"]))
        for probe, o in u.observations(report, "faulty").items():
            facts = o["evidence"]["driver_facts"]
            self.assertIs(facts["response_streamed"], True, probe)
            self.assertGreater(facts["response_bytes"], 64 << 20, probe)
            self.assertEqual(o["evidence"]["stdout_bytes"], 64 << 20, probe)
        self.assertEqual(code, 0)

    def test_service_dying_mid_suite_is_named_and_later_cells_error_fast(self):
        # preflight + selftest.one + selftest.two are answered; selftest.three kills the service
        # (the fixture exits without answering); selftest.four finds it down.
        res, report, code, left, wall = run_faulty("die-after=3", jobs=1)
        self.check_completed(res, report, left)
        v = u.verdicts(report, "faulty")
        order = [r["probe"] for r in report["rows"]]  # the order the service saw them (--jobs 1)
        passed = [p for p in order if v[p]["verdict"] == "PASS"]
        errored = [p for p in order if v[p]["verdict"] == "ERROR"]
        self.assertEqual(len(passed), 2, v)
        self.assertEqual(len(errored), 2, v)
        culprit, later = errored
        self.assertIn("the probe took the service down", v[culprit]["reason"])
        facts = u.observations(report, "faulty")[culprit]["evidence"]["driver_facts"]
        self.assertIs(facts["service_died"], True)
        self.assertEqual(facts["health_before"], "ok")
        self.assertIn("the service is down: probe %s" % culprit, v[later]["reason"])
        self.assertIn("took the service down", v[later]["reason"])
        self.assertEqual(code, 3)  # the fixture died on purpose
        self.assertLess(wall, 30)


if __name__ == "__main__":
    unittest.main()
