"""End-to-end: a PASS on "exit 124" alone (docs/traps.md, trap 47), through the REAL sandprobe
binary and three run-code fixtures (harness/testing/runcode_fixture/fixture.py) in one run with the
local control. The suite's entries are bare: no `canary` parameter, so the heartbeats come from
the probes' own defaults (the harness's TCP canary).

  soft-timeout  claims a timeout (exit 124, "timed out") and leaves the loop running: its
                heartbeats reach the canary after the answer, res.cpu-loop FAILs.
  unsafe        kills the evaluation at its timeout: the heartbeat is heard while the loop runs
                and not after the answer, res.cpu-loop PASSes with proof (positive evidence).
  pool=1        a bubblewrap sandbox without a network: no heartbeat can reach any canary, so the
                service's "exit 124" is all there is: res.cpu-loop PASSes on the sandbox's word,
                and every format says so and counts it.

proc.outlives-call, also bare, FAILs on its heartbeat where the detached process outlives the
call (unsafe, soft-timeout) and is contained with absence evidence where nothing can be heard.
Nothing may be left after the fixtures stopped. Traffic: 127.0.0.1 only.
"""
import os
import re
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

import e2e_util as u

ARMS = {"soft-timeout": "runcode-soft-timeout", "unsafe": "runcode-unsafe",
        "pool=1": "runcode-pool1"}
# Bare entries: the loop only gets its own safety net lowered (a loop a service leaves running
# gives up after max_s; the fixtures kill theirs when they stop).
ROWS = {"res.cpu-loop": {"max_s": 30}, "proc.outlives-call": None}
WORD = "on the sandbox's word"


class SandboxWord(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        base = cls.make_tmp("sandprobe-e2e-word-")
        cls.run_cwd = os.path.join(base, "run")
        os.makedirs(cls.run_cwd)
        suite = u.write_suite(base, "word", list(ROWS), ROWS)
        fixtures, manifests = [], []
        try:
            for mode, name in ARMS.items():
                fixture = u.Fixture(mode, "--timeout", "3", cwd=base)
                fixtures.append(fixture)
                path = u.write_http_manifest(os.path.join(base, name + ".yaml"), name, fixture.url)
                manifests += ["--sandbox", path]
            cls.res = u.run_sandprobe(
                ["run", "--suite", suite] + manifests +
                ["--control", u.LOCAL_MANIFEST, "--out", cls.out, "--canary-dir", cls.canary_dir,
                 "--jobs", "2", "--default-timeout", "2", "--grace", "5"],
                timeout=240, cwd=cls.run_cwd)
            cls.report = u.report_or_none(cls.out)
        finally:
            cls.fixture_exits = [f.stop() for f in fixtures]
        cls.left_after_stop = (u.sandprobe_processes(cls.report["nonce_hash"])
                               if cls.report else [])

    def verdict(self, arm, probe="res.cpu-loop"):
        return u.verdicts(self.report, arm)[probe]

    def evidence(self, arm, probe="res.cpu-loop"):
        return u.observations(self.report, arm)[probe]

    def test_bare_entries_got_the_harness_canary(self):
        canaries = {self.evidence(arm, probe)["params"]["canary"]
                    for arm in list(ARMS.values()) + ["local"] for probe in ROWS}
        self.assertEqual(len(canaries), 1, canaries)  # identical parameters in every arm
        self.assertRegex(canaries.pop(), r"^127\.0\.0\.1:\d+$")
        # ... and it is the live TCP canary: the control's loop was heard on it.
        hits = self.evidence("local")["evidence"]["canary_hits"]
        self.assertTrue(hits and all(h["kind"] == "tcp" for h in hits), hits)

    def test_a_service_that_leaves_the_loop_running_fails_on_the_heartbeat(self):
        v = self.verdict(ARMS["soft-timeout"])
        self.assertEqual(v["verdict"], "FAIL", v["reason"])
        self.assertIn("still running after the sandbox reported it stopped", v["reason"])
        self.assertEqual(v["evidence_kind"], "positive")
        o = self.evidence(ARMS["soft-timeout"])["evidence"]
        self.assertEqual((o["ending"], o["exit_code"]), ("exited", 124))
        ended = o["driver_facts"]["call_ended_unix_ms"]
        late = [h for h in o["canary_hits"] if h["unix_ms"] > ended + 500]
        self.assertGreaterEqual(len(late), 2, o["canary_hits"])

    def test_an_honest_service_passes_with_proof(self):
        v = self.verdict(ARMS["unsafe"])
        self.assertEqual(v["verdict"], "PASS", v["reason"])
        self.assertEqual(v["evidence_kind"], "positive", v["reason"])
        self.assertNotIn("sandbox's word", v["reason"])
        self.assertIn("its heartbeat was heard while it ran and", v["reason"])
        self.assertEqual(v["validated_by"], "local")
        o = self.evidence(ARMS["unsafe"])["evidence"]
        self.assertEqual((o["ending"], o["exit_code"]), ("exited", 124))
        ended = o["driver_facts"]["call_ended_unix_ms"]
        during = [h for h in o["canary_hits"] if h["unix_ms"] <= ended]
        self.assertGreaterEqual(len(during), 1, "the heartbeat was heard while the loop ran")
        self.assertLess(len([h for h in o["canary_hits"] if h["unix_ms"] > ended + 500]), 2)

    def test_no_possible_proof_is_a_pass_on_the_sandboxs_word(self):
        arm = ARMS["pool=1"]
        v = self.verdict(arm)
        self.assertEqual(v["verdict"], "PASS", v["reason"])
        self.assertEqual(v["evidence_kind"], "sandbox_word", v["reason"])
        self.assertIn("on the sandbox's word only", v["reason"])
        self.assertIn("was never heard", v["reason"])
        o = self.evidence(arm)
        self.assertEqual(o["evidence_kind"], "sandbox_word")
        self.assertEqual((o["evidence"]["ending"], o["evidence"]["exit_code"]), ("exited", 124))
        self.assertEqual(o["evidence"]["canary_hits"], [])
        self.assertEqual(o["evidence"]["driver_facts"]["ended_by"], "service")
        self.assertNotIn("survivors", o["evidence"]["driver_facts"])

    def test_outlives_call_bare_entry_uses_its_heartbeat(self):
        for mode in ("unsafe", "soft-timeout"):
            v = self.verdict(ARMS[mode], "proc.outlives-call")
            self.assertEqual(v["verdict"], "FAIL", (mode, v["reason"]))
            self.assertTrue(self.evidence(ARMS[mode], "proc.outlives-call")["evidence"]
                            ["canary_hits"], mode)
        v = self.verdict(ARMS["pool=1"], "proc.outlives-call")
        self.assertEqual((v["verdict"], v["evidence_kind"]), ("PASS", "absence"), v["reason"])

    def test_the_summary_counts_it_in_every_format(self):
        counts = {c["candidate"]: c for c in self.report["summary"]["candidates"]}
        self.assertEqual(counts[ARMS["pool=1"]]["PASS"], 2)
        self.assertEqual(counts[ARMS["pool=1"]]["pass_on_sandbox_word"], 1)
        self.assertEqual(counts[ARMS["unsafe"]]["pass_on_sandbox_word"], 0)
        self.assertEqual(counts[ARMS["soft-timeout"]]["pass_on_sandbox_word"], 0)
        self.assertEqual(self.res.returncode, 1, self.res.describe())  # FAILs elsewhere
        # text (stdout): the cell is PASS*, the summary says how many, the rows are listed
        self.assertIn("runcode-pool1: 2 PASS (1 %s), 0 FAIL" % WORD, self.res.stdout)
        self.assertRegex(self.res.stdout, r"exit 124\s+PASS\*")
        self.assertRegex(self.res.stdout, r"\n  res\.cpu-loop  runcode-pool1  contained, on the "
                                          r"sandbox's word only")
        with open(os.path.join(self.out, "matrix.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("runcode-pool1: 2 PASS (1 %s), 0 FAIL" % WORD, md)
        self.assertIn("exit 124 · **PASS** *(%s)* |" % WORD, md)
        self.assertIn("### PASS %s" % WORD, md)
        junit = ET.parse(os.path.join(self.out, "junit.xml")).getroot()
        suite = junit.find("testsuite[@name='runcode-pool1']")
        props = {p.get("name"): p.get("value") for p in suite.find("properties")}
        self.assertEqual(props["pass_on_sandbox_word"], "1")
        case = suite.find("testcase[@name='res.cpu-loop (infinite loop)']")
        self.assertIsNone(case.find("failure"))
        self.assertIn(WORD, case.find("properties/property[@name='evidence']").get("value"))
        honest = junit.find("testsuite[@name='runcode-unsafe']/testcase"
                            "[@name='res.cpu-loop (infinite loop)']")
        self.assertIsNone(honest.find("properties"))
        tap = u.tap_check(os.path.join(self.out, "report.tap"), ok="false", points=6)
        named = {(a["candidate"], a["probe"]): a for a in tap["asserts"]}
        point = named[("runcode-pool1", "res.cpu-loop")]
        self.assertTrue(point["ok"])
        self.assertIn("(PASS %s)" % WORD, point["name"])
        self.assertNotIn(WORD, named[("runcode-unsafe", "res.cpu-loop")]["name"])
        with open(os.path.join(self.out, "report.html"), encoding="utf-8") as f:
            html = f.read()
        cell = re.search(r'<td class="cell v-pass word" data-probe="res\.cpu-loop" '
                         r'data-arm="runcode-pool1" data-verdict="PASS" '
                         r'data-evidence="sandbox_word">', html)
        self.assertIsNotNone(cell, "the pool's loop cell is marked in report.html")
        self.assertEqual(html.count('class="cell v-pass word"'), 1)

    def test_report_json_is_valid_against_the_schema(self):
        r = subprocess.run([sys.executable, os.path.join(u.HOME, "reports", "schema",
                                                         "validate.py"),
                            os.path.join(self.out, "report.json")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.report["schema_version"], 3)

    def test_nothing_left_once_the_services_are_gone(self):
        self.assertEqual(self.fixture_exits, [0, 0, 0])
        self.assertEqual(self.left_after_stop, [])


if __name__ == "__main__":
    unittest.main()
