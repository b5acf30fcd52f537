"""E2E: the hostile output corpus (harness/testing/hostile/cases.py) through bubblewrap.

Every case, the heavy ones too (10^6 lines, one 64 MiB line), as one suite through the REAL
sandprobe and bubblewrap (the command driver) beside the local control; run_corpus.py checks each
case: the verdict equals the honest probe's PASS, report.json validates against its schema,
junit.xml reads in pugixml with XML 1.0 characters only, report.tap in tap-parser (strict),
report.html in headless chromium, matrix.md keeps its table rows, and sandprobe's own output
carries no escape byte. The docker drivers and the run-code fixture run the same corpus in
test_docker_hostile.py, the kubernetes driver on the real cluster (test_cluster_nodes.py).
Nothing touches the network.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hostile"))
import cases as corpus  # noqa: E402
import run_corpus  # noqa: E402


class CorpusCase(unittest.TestCase):
    """Base: run DRIVERS once in setUpClass; one test per driver, a subTest per case."""
    DRIVERS = ()

    @classmethod
    def setUpClass(cls):
        cls.lines = []
        cls.results = run_corpus.run_corpus(list(cls.DRIVERS), log=cls.lines.append)

    def check_driver(self, driver):
        r = self.results[driver]
        log = "\n".join(self.lines)
        self.assertEqual(r["run_failures"], [], log)
        want = [c[0] for c in corpus.CASES if not c[3] or driver in run_corpus.HEAVY_DRIVERS]
        self.assertEqual(sorted(r["cases"]), sorted(want), log)
        known = sorted(c for d, c in run_corpus.KNOWN_DEFECTS if d == driver)
        for name in want:
            with self.subTest(driver=driver, case=name):
                if name not in known:  # a known defect may fail (some fail only sometimes)
                    self.assertNotIn(name, r["failures"], "; ".join(r["failures"].get(name, [])))
        n = len(want) - 1  # the honest reference is not counted
        self.assertEqual(r["total"], n, log)
        self.assertEqual(r["passed"] + len(r["failures"]), n, log)
        self.assertEqual(sorted(r["failures"]), r["known_defects"], log)


class Bubblewrap(CorpusCase):
    DRIVERS = ("bubblewrap",)

    def test_every_case_keeps_the_verdict_and_every_format_parses(self):
        self.check_driver("bubblewrap")

    def test_junit_check_fails_on_what_pugixml_alone_accepts(self):
        """The checker can fail: a control character (raw or as &#1;), a broken document."""
        import json
        import subprocess
        import tempfile
        good = '<testsuites><testsuite name="a"><testcase name="p x"/></testsuite></testsuites>'
        docs = {"good": (good, 0), "raw": (good.replace("p x", "p \x01"), 1),
                "ref": (good.replace("p x", "p &#1;"), 1), "ffff": (good.replace("x", "\uffff"), 1),
                "broken": (good.replace("</testsuites>", ""), 1)}
        with tempfile.TemporaryDirectory() as d:
            for name, (text, want) in docs.items():
                path = os.path.join(d, name + ".xml")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                r = subprocess.run([run_corpus.JUNIT_CHECK, path], capture_output=True)
                self.assertEqual(r.returncode, want, (name, r.stdout, r.stderr))
                if want == 0:
                    self.assertEqual(json.loads(r.stdout)["suites"], {"a": {"p x": "ok"}})

    def test_corpus_size_and_harness_memory(self):
        self.assertGreaterEqual(len(corpus.CASES) - 1, 30)  # the honest reference not counted
        self.assertLess(self.results["bubblewrap"]["max_rss_mib"], run_corpus.MAX_RSS_MIB)


if __name__ == "__main__":
    unittest.main()
