"""End-to-end: service designs that look isolated and are not, through the REAL sandprobe binary
and the run-code fixture (harness/testing/runcode_fixture/fixture.py), each with the local control:

  pool=3        a warm pool of 3 bubblewrap sandboxes whose /tmp is reused round-robin:
                state.persists FAILs naming the calls ("call 4 found call 1's tmp file");
                proc.sibling PASSes (a PID namespace per evaluation).
  soft-timeout  `sh -c 'python3 ...'` whose timeout kills only the shell and answers 124:
                res.cpu-loop FAILs "still running after the sandbox reported it stopped" (its
                heartbeats reach the TCP canary after the answer).
  shared        a second caller in flight joins the first caller's sandbox: sequential calls are
                fresh, but state.persists (its concurrent pair) and proc.sibling FAIL.
  command       harness/testing/e2e/manifests/soft-timeout-command.yaml: `timeout --foreground`
                around the shell, the same design for the command driver: res.cpu-loop FAILs on
                the reaper's survivors.
The exec design (one long-lived container, evaluations through the Engine API's exec) needs the
Docker daemon: test_docker_http.py. Nothing may be left: no process of the run after the fixture
stopped, no state file in /tmp. Traffic: 127.0.0.1 only.
"""
import os
import unittest

import e2e_util as u

ROWS = {
    "state.persists": {"overlap_s": 1.5},
    "proc.sibling": {"overlap_s": 1.5},
    "res.cpu-loop": {"canary": "{canary.tcp}", "max_s": 30},
    "priv.uid": None,
}
SOFT_COMMAND = os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifests",
                            "soft-timeout-command.yaml")


def run_design(cls, mode=None, manifest=None, rows=None, while_fixture_runs=None):
    """One sandprobe run of `rows` (default ROWS) against fixture.py --mode MODE (or a given
    manifest) with the local control; while_fixture_runs() is called after the run, before the
    fixture stops. Sets cls.res, cls.report, cls.fixture_exit, cls.left_after_stop."""
    rows = rows or ROWS
    base = cls.make_tmp("sandprobe-e2e-design-")
    cls.run_cwd = os.path.join(base, "run")
    os.makedirs(cls.run_cwd)
    suite = u.write_suite(base, "designs", list(rows), rows)
    fixture = u.Fixture(mode, "--timeout", "3", cwd=base) if mode else None
    try:
        if fixture:
            name = "runcode-" + mode.replace("=", "")  # a manifest name has no "="
            manifest = u.write_http_manifest(os.path.join(base, "m.yaml"), name, fixture.url)
        cls.res = u.run_sandprobe(
            ["run", "--suite", suite, "--sandbox", manifest, "--control", u.LOCAL_MANIFEST,
             "--out", cls.out, "--canary-dir", cls.canary_dir, "--jobs", "2", "--format", "json",
             # 5 s of grace over the 3 s claim: a shared holder or a pool's bubblewrap starting
             # on a loaded 2-core machine must not turn a pair call into a deadline
             "--default-timeout", "2", "--grace", "5"], timeout=180, cwd=cls.run_cwd)
        cls.report = u.report_or_none(cls.out)
        if while_fixture_runs:
            while_fixture_runs()
    finally:
        cls.fixture_exit = fixture.stop() if fixture else 0
    cls.left_after_stop = u.sandprobe_processes(cls.report["nonce_hash"]) if cls.report else []


class DesignCase(u.RunCase):
    ARM = ""

    def verdict(self, probe):
        return u.verdicts(self.report, self.ARM)[probe]

    def assertRow(self, probe, want, reason_has=""):
        v = self.verdict(probe)
        self.assertEqual(v["verdict"], want, "%s: %s" % (probe, v["reason"]))
        self.assertIn(reason_has, v["reason"])
        if want == "PASS":
            self.assertEqual(v["validated_by"], "local", probe)

    def assertNothingLeft(self):
        self.assertLess(self.res.wall_s, 90, "the four rows and the control took too long")
        self.assertEqual(self.fixture_exit, 0)
        self.assertEqual(self.left_after_stop, [])
        self.assertEqual(u.state_files(self.report, "/tmp", self.run_cwd), [])


class WarmPool(DesignCase):
    ARM = "runcode-pool3"

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        run_design(cls, "pool=3")

    def test_state_fails_naming_the_calls_that_met_in_one_member(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        self.assertRow("state.persists", "FAIL", "call 4 found call 1's tmp file")
        pairs = u.observations(self.report, self.ARM)["state.persists"]["evidence"]["result"]
        self.assertNotIn("call 2 found call 1's tmp file", pairs["pairs"])  # other members

    def test_other_rows_pass(self):
        for probe in ("proc.sibling", "res.cpu-loop", "priv.uid"):
            self.assertRow(probe, "PASS")

    def test_nothing_left(self):
        self.assertNothingLeft()


class SoftTimeout(DesignCase):
    ARM = "runcode-soft-timeout"

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        run_design(cls, "soft-timeout")

    def test_loop_is_still_running_after_the_service_said_it_stopped(self):
        self.assertRow("res.cpu-loop", "FAIL",
                       "still running after the sandbox reported it stopped")
        o = u.observations(self.report, self.ARM)["res.cpu-loop"]
        self.assertEqual((o["evidence"]["ending"], o["evidence"]["exit_code"]), ("exited", 124))
        ended = o["evidence"]["driver_facts"]["call_ended_unix_ms"]
        late = [h for h in o["evidence"]["canary_hits"] if h["unix_ms"] > ended + 500]
        self.assertGreaterEqual(len(late), 2, o["evidence"]["canary_hits"])

    def test_nothing_left_once_the_service_is_gone(self):
        self.assertNothingLeft()


class SharedInFlight(DesignCase):
    ARM = "runcode-shared"

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        run_design(cls, "shared")

    def test_state_fails_only_for_callers_in_flight(self):
        self.assertRow("state.persists", "FAIL", "(both in flight)")
        pairs = u.observations(self.report, self.ARM)["state.persists"]["evidence"]["result"]
        self.assertFalse([p for p in pairs["pairs"] if "both in flight" not in p],
                         "sequential callers get a fresh sandbox: %s" % pairs["pairs"])

    def test_sibling_fails(self):
        self.assertRow("proc.sibling", "FAIL", "could signal it")

    def test_the_rest_passes(self):
        for probe in ("res.cpu-loop", "priv.uid"):
            self.assertRow(probe, "PASS")

    def test_nothing_left(self):
        self.assertNothingLeft()


class SoftTimeoutCommand(DesignCase):
    ARM = "soft-timeout-command"

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        run_design(cls, manifest=SOFT_COMMAND)

    def test_loop_fails_on_the_reapers_survivors(self):
        self.assertRow("res.cpu-loop", "FAIL",
                       "still running after the sandbox reported it stopped")
        facts = u.observations(self.report, self.ARM)["res.cpu-loop"]["evidence"]["driver_facts"]
        self.assertGreaterEqual(facts["survivors"], 1)
        self.assertIn("sandprobe-reaper", facts["survivors_source"])

    def test_nothing_left(self):
        self.assertNothingLeft()


if __name__ == "__main__":
    unittest.main()
