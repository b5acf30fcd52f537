"""End-to-end: suites/repl-acceptance.yaml, as shipped, against the run-code fixture service
(harness/testing/runcode_fixture/fixture.py) through the http driver, with the local control.

isolated (a fresh hardened container per evaluation, on the REAL Docker daemon): every criterion
holds. unsafe (evaluations are plain processes of the service): every criterion is broken, and
each names exactly the rows of it that did not PASS. Every format opens with the checklist.
Traffic: the fixture listens on 127.0.0.1; the probes target the harness's loopback canaries.
"""
import os
import unittest
import xml.etree.ElementTree as ET

import e2e_util as u
from test_docker import require_docker

SUITE = os.path.join(u.HOME, "suites", "repl-acceptance.yaml")
CRITERIA = ["No network egress", "No filesystem writes", "Bounded execution",
            "Stateless between calls"]


def run_suite(cls, mode, limits):
    """The shipped suite against fixture.py in `mode`; sets cls.res, cls.report, cls.fixture_exit."""
    base = cls.make_tmp("sandprobe-e2e-repl-%s-" % mode)
    # 5 s, as manifests/http/fixture-*.yaml claim: the suite's concurrent pairs look for each other
    # for 3 s (overlap_s), so a 3 s service timeout would cut them before they answer.
    cls.fixture = u.Fixture(mode, "--timeout", "5", cwd=base)
    try:
        manifest = u.write_http_manifest(os.path.join(base, mode + ".yaml"), "runcode-" + mode,
                                         cls.fixture.url, timeout_s=5)
        with open(manifest) as f:  # the fixture's claims: probes size their attacks from them
            text = f.read().replace("limits: {timeout: 5s}", "limits: " + limits)
        with open(manifest, "w") as f:
            f.write(text)
        cls.run_once(["--suite", SUITE, "--sandbox", manifest, "--control", u.LOCAL_MANIFEST,
                      "--jobs", "2", "--grace", "3"], timeout=280, cwd=base)
    finally:
        cls.fixture_exit = cls.fixture.stop()


class Checklist:
    """Checks shared by both modes (mixed into the unittest cases below)."""

    def criteria(self):
        return {c["name"].split(":")[0]: c for c in self.report["criteria"]}

    def test_the_suites_criteria_are_reported(self):
        self.assertEqual(list(self.criteria()), CRITERIA)
        self.assertEqual(self.fixture_exit, 0)

    def test_a_criterion_holds_exactly_when_all_its_rows_pass(self):
        verdicts = u.verdicts(self.report, self.ARM)
        for name, c in self.criteria().items():
            (result,) = c["results"]
            self.assertEqual(result["candidate"], self.ARM)
            not_passing = [p for p in c["probes"] if verdicts[p]["verdict"] != "PASS"]
            self.assertEqual([b["probe"] for b in result["broken"]], not_passing, name)
            self.assertEqual(result["holds"], not not_passing, name)
            for b in result["broken"]:
                self.assertEqual(b["verdict"], verdicts[b["probe"]]["verdict"])

    def test_every_format_opens_with_the_checklist(self):
        with open(os.path.join(self.out, "matrix.md")) as f:
            md = f.read()
        self.assertLess(md.index("## Acceptance criteria"), md.index("| probe |"))
        holding = sum(c["results"][0]["holds"] for c in self.report["criteria"])
        self.assertIn("**%s**: %d of 4 criteria hold" % (self.ARM, holding), md)
        self.assertIn("%s: %d of 4 hold" % (self.ARM, holding), self.res.stdout)
        self.assertLess(self.res.stdout.index("acceptance criteria ("),
                        self.res.stdout.index("\nverdicts\n"))
        first = ET.parse(os.path.join(self.out, "junit.xml")).getroot().find("testsuite")
        self.assertEqual(first.get("name"), "acceptance criteria: " + self.ARM)
        self.assertEqual((first.get("tests"), first.get("failures")), ("4", str(4 - holding)))


class Isolated(Checklist, u.RunCase):
    ARM = "runcode-isolated"

    @classmethod
    def setUpClass(cls):
        require_docker()
        u.require_sandprobe()
        run_suite(cls, "isolated", "{timeout: 5s, memory: 256Mi, tmp: 32Mi, pids: 64}")

    def test_every_criterion_holds(self):
        self.assertEqual(self.res.returncode, 0, self.res.describe())
        for name, c in self.criteria().items():
            self.assertEqual(c["results"][0]["broken"], [], name)
            self.assertTrue(c["results"][0]["holds"], name)
        with open(os.path.join(self.out, "matrix.md")) as f:
            md = f.read()
        self.assertEqual(md.count("- ✅ "), 4)
        self.assertNotIn("- ❌ ", md)


class Unsafe(Checklist, u.RunCase):
    ARM = "runcode-unsafe"

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        run_suite(cls, "unsafe", "{timeout: 5s}")

    def test_every_criterion_names_the_rows_that_break_it(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        broken = {name: [b["probe"] for b in c["results"][0]["broken"]]
                  for name, c in self.criteria().items()}
        for name in CRITERIA:
            self.assertFalse(self.criteria()[name]["results"][0]["holds"], name)
        # The service's own processes, network, files and state (test_http.py, the same fixture)
        for probe in ("net.dns", "net.http-by-name", "net.tcp-by-ip", "net.udp"):
            self.assertIn(probe, broken["No network egress"])
        self.assertIn("fs.fill-tmp", broken["No filesystem writes"])
        for probe in ("proc.outlives-call", "res.output-flood"):
            self.assertIn(probe, broken["Bounded execution"])
        # its own timeout kills the loop (no heartbeat after the answer): that row holds
        self.assertNotIn("res.cpu-loop", broken["Bounded execution"])
        self.assertEqual(broken["Stateless between calls"], ["state.persists", "proc.sibling"])
        with open(os.path.join(self.out, "matrix.md")) as f:
            md = f.read()
        self.assertIn("- ❌ Stateless between calls: no call sees what another call left or is "
                      "running — **broken by:** state between calls (state.persists) **FAIL**, sibling "
                      "evaluation (proc.sibling) **FAIL**\n", md)


if __name__ == "__main__":
    unittest.main()
