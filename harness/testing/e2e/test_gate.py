"""E2E: the CI gate's repeat trials, expectations, diff and re-render, on real bubblewrap.

- `run --repeat 5` on manifests leak-every-kth.yaml (a wrapper that runs every 5th call with no
  sandbox, its call counter in a directory this test owns): FAIL, marked flaky with the counts in
  text, Markdown, JSON and JUnit; the control validated in its trials.
- `diff` of two real runs of one arm name: bubblewrap.yaml's argv (hardened), then the same with
  --share-net (one weakness): exactly the network rows regress, exit 1.
- `run --expect`: those known FAILs accepted (exit 0, ACCEPTED in every format), one expired
  (FAIL again, "expired <date>", exit 1), one that matches nothing (a warning).
- `report REPORT.json` reproduces each run's matrix.md, junit.xml and report.json byte for byte.
Probe traffic goes only to the harness's loopback canaries.
"""
import json
import os
import re
import tempfile
import unittest

import e2e_util as u

LEAK_MANIFEST = os.path.join(u.HERE, "manifests", "leak-every-kth.yaml")
DIFF_ROWS = ["net.tcp-by-ip", "net.udp", "fs.write-root", "cred.env-secrets"]
REGRESSED = ["net.tcp-by-ip", "net.udp"]  # --share-net: the network rows


def rerender(test, out, fmt):
    """`sandprobe report out/report.json --format fmt` (stdout bytes)."""
    r = u.run_sandprobe(["report", os.path.join(out, "report.json"), "--format", fmt, "--no-color"])
    test.assertEqual(r.returncode, 0, r.describe())
    return r.stdout_bytes


def assert_rerenders_byte_for_byte(test, out):
    for fmt, name in [("markdown", "matrix.md"), ("junit", "junit.xml"), ("json", "report.json")]:
        with test.subTest(format=fmt):
            with open(os.path.join(out, name), "rb") as f:
                written = f.read()
            test.assertEqual(rerender(test, out, fmt), written, "%s differs from the re-render" % name)


class RepeatFlaky(u.RunCase):
    """One leaking trial in five is a FAIL, shown flaky with its counts, never retried green."""

    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-gate-repeat-")
        cls.counter = os.path.join(base, "counter")  # the wrapper's call counter: ours
        os.mkdir(cls.counter)
        suite = u.write_suite(base, "repeat", ["net.tcp-by-ip"])
        cls.run_once(["--suite", suite, "--sandbox", LEAK_MANIFEST, "--repeat", "5",
                      "--no-color"] + u.FAST_FLAGS, timeout=90,
                     env={"SANDPROBE_E2E_COUNTER_DIR": cls.counter,
                          "SANDPROBE_E2E_LEAK_EVERY": "5"})

    def test_fail_exit_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        v = u.verdicts(self.report, "leak-every-kth")["net.tcp-by-ip"]
        self.assertEqual(v["verdict"], "FAIL", v["reason"])

    def test_wrapper_ran_the_preflight_and_five_trials(self):
        with open(os.path.join(self.counter, "count")) as f:
            self.assertEqual(f.read().strip(), "6")  # call 5 leaked: one trial of five

    def test_trials_one_exposed_four_contained_shown_is_the_leak(self):
        obs = u.observations(self.report, "leak-every-kth")["net.tcp-by-ip"]
        trials = obs["trials"]
        self.assertEqual(len(trials), 5)
        self.assertEqual(sorted(t["exposure"] for t in trials), ["contained"] * 4 + ["exposed"])
        self.assertEqual(len({t["invocation"] for t in trials}), 5)
        self.assertTrue(obs["flaky"])
        self.assertEqual(obs["trial_counts"], "blocked 4/5, REACHED 1/5")
        self.assertEqual(obs["exposure"], "exposed")  # the cell shown is the leaking trial
        self.assertTrue(obs["evidence"]["canary_hits"], "no server-side proof of the leak")

    def test_control_validated_in_its_trials(self):
        obs = u.observations(self.report, "local")["net.tcp-by-ip"]
        self.assertEqual([t["exposure"] for t in obs["trials"]], ["exposed"] * 5)
        self.assertFalse(obs["flaky"])

    def test_flaky_mark_in_every_format(self):
        mark = "flaky: blocked 4/5, REACHED 1/5"
        with open(os.path.join(self.out, "matrix.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("REACHED *(%s)* · **FAIL**" % mark, md)
        with open(os.path.join(self.out, "junit.xml"), encoding="utf-8") as f:
            junit = f.read()
        self.assertRegex(junit, r'<failure message="\[%s\] ' % re.escape(mark))
        self.assertIn("trials: 5 trials, " + mark, junit)
        self.assertIn("net.tcp-by-ip  leak-every-kth  " + mark, self.res.stdout)
        self.assertRegex(self.res.stdout, r"REACHED~\s+FAIL")

    def test_report_rerenders_byte_for_byte(self):
        assert_rerenders_byte_for_byte(self, self.out)


def bwrap_gate_manifest(path, share_net):
    argv = u.manifest_argv(u.BWRAP_MANIFEST)
    if share_net:
        argv.insert(argv.index("--unshare-all") + 1, "--share-net")
    # One arm name for both runs: diff compares a baseline with today's run of the same arm.
    return u.write_manifest(path, "bwrap-gate", argv, control=u.LOCAL_MANIFEST,
                            limits={"tmp": "32Mi"},
                            description="bubblewrap.yaml" + (" + --share-net" if share_net else ""))


class DiffAndExpectations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-gate-diff-")
        base = cls.tmp.name
        suite = u.write_suite(base, "gate", DIFF_ROWS)
        hardened = bwrap_gate_manifest(os.path.join(base, "hardened.yaml"), False)
        weak = bwrap_gate_manifest(os.path.join(base, "weak.yaml"), True)
        cls.expect_ok = cls.write(base, "accepted.yaml", [
            ("net.tcp-by-ip", "bwrap-gate", "ticket 13: egress proxy lands next sprint", "2099-12-31"),
            ("net.udp", "", "ticket 13: same", "2099-12-31"),
            ("net.dns", "bwrap-gate", "not in this suite", "2099-12-31")])
        cls.expect_expired = cls.write(base, "expired.yaml", [
            ("net.tcp-by-ip", "bwrap-gate", "ticket 13", "2099-12-31"),
            ("net.udp", "bwrap-gate", "ticket 9: was due", "2000-01-31")])
        cls.runs = {}
        for name, manifest, extra in [("old", hardened, []), ("new", weak, []),
                                      ("accepted", weak, ["--expect", cls.expect_ok]),
                                      ("expired", weak, ["--expect", cls.expect_expired])]:
            out = os.path.join(base, name)
            res = u.run_sandprobe(["run", "--suite", suite, "--sandbox", manifest, "--out", out,
                                   "--canary-dir", os.path.join(base, "canary"), "--no-color"] +
                                  extra + u.FAST_FLAGS, timeout=90)
            cls.runs[name] = (res, out, u.report_or_none(out))

    @staticmethod
    def write(base, name, entries):
        lines = ["description: e2e known FAILs", "expectations:"]
        for probe, candidate, reason, expires in entries:
            lines.append("  - probe: %s" % probe)
            if candidate:
                lines.append("    candidate: %s" % candidate)
            lines += ["    reason: %s" % json.dumps(reason), "    expires: %s" % expires]
        path = os.path.join(base, name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_of(self, name):
        res, out, report = self.runs[name]
        self.assertIsNotNone(report, "no report.json\n" + res.describe())
        return res, out, report

    def read(self, name, file):
        with open(os.path.join(self.runs[name][1], file), encoding="utf-8") as f:
            return f.read()

    def test_baselines_as_expected(self):
        res, _, report = self.run_of("old")
        self.assertEqual(res.returncode, 0, res.describe())
        res, _, report = self.run_of("new")
        self.assertEqual(res.returncode, 1, res.describe())
        got = {p: v["verdict"] for p, v in u.verdicts(report, "bwrap-gate").items()}
        self.assertEqual(got, {p: "FAIL" if p in REGRESSED else "PASS" for p in DIFF_ROWS})

    def diff(self, old, new, fmt="text"):
        return u.run_sandprobe(["diff", os.path.join(self.runs[old][1], "report.json"),
                                os.path.join(self.runs[new][1], "report.json"), "--format", fmt])

    def test_diff_names_exactly_the_regressed_rows_exit_1(self):
        self.run_of("old"), self.run_of("new")
        r = self.diff("old", "new")
        self.assertEqual(r.returncode, 1, r.describe())
        regressed = re.findall(r"^  REGRESSION (\S+)\s+bwrap-gate\s+PASS -> FAIL", r.stdout, re.M)
        self.assertEqual(sorted(regressed), REGRESSED, r.stdout)
        self.assertNotRegex(r.stdout, r"(?m)^  changed ")  # nothing else changed
        self.assertIn("4 row(s) compared, 2 changed, 2 regression(s); exit code 1", r.stdout)
        md = self.diff("old", "new", "markdown")
        self.assertEqual(md.returncode, 1, md.describe())
        self.assertEqual(sorted(re.findall(r"^\| \*\*regression\*\* \| [^|]*\(`([^`]+)`\)",
                                           md.stdout, re.M)), REGRESSED, md.stdout)

    def test_diff_the_other_way_and_with_itself(self):
        self.run_of("old"), self.run_of("new")
        back = self.diff("new", "old")
        self.assertEqual(back.returncode, 0, back.describe())  # FAIL -> PASS is no regression
        self.assertEqual(len(re.findall(r"^  changed ", back.stdout, re.M)), 2, back.stdout)
        same = self.diff("old", "old")
        self.assertEqual(same.returncode, 0, same.describe())
        self.assertIn("0 changed", same.stdout)

    def test_accepted_rows_open_the_gate_and_show_in_every_format(self):
        res, out, report = self.run_of("accepted")
        self.assertEqual(res.returncode, 0, res.describe())
        vs = u.verdicts(report, "bwrap-gate")
        for probe in REGRESSED:
            with self.subTest(probe=probe):
                self.assertEqual(vs[probe]["verdict"], "FAIL")  # never hidden
                self.assertEqual(vs[probe]["shown"], "ACCEPTED")
                self.assertFalse(vs[probe]["accepted"]["expired"])
                self.assertEqual(vs[probe]["accepted"]["expires"], "2099-12-31")
        summary = report["summary"]["candidates"][0]
        self.assertEqual((summary["FAIL"], summary["ACCEPTED"], summary["PASS"]), (0, 2, 2))
        md = self.read("accepted", "matrix.md")
        self.assertEqual(md.count("· **ACCEPTED**"), 2)
        self.assertIn("2 PASS, 0 FAIL, 0 INCONCLUSIVE, 0 SKIP, 0 ERROR, 2 ACCEPTED", md)
        self.assertIn("accepted until 2099-12-31: ticket 13: egress proxy lands next sprint", md)
        junit = self.read("accepted", "junit.xml")
        self.assertEqual(len(re.findall(r'<skipped message="\[accepted until 2099-12-31', junit)), 2)
        self.assertNotIn("<failure", junit)
        self.assertRegex(res.stdout, r"net\.tcp-by-ip\s+bwrap-gate\s+ACCEPTED\s+accepted until")
        # The expectation for a row not in this run: a warning, in the run's notes too.
        self.assertIn("expectation for net.dns in bwrap-gate matched no FAIL", res.stderr)
        self.assertTrue(any("net.dns" in n and "matched no FAIL" in n for n in report["notes"]))
        d = self.diff("old", "accepted")
        self.assertEqual(d.returncode, 0, d.describe())  # PASS -> ACCEPTED does not regress
        self.assertEqual(len(re.findall(r"PASS -> ACCEPTED", d.stdout)), 2, d.stdout)

    def test_expired_acceptance_fails_the_gate_again(self):
        res, out, report = self.run_of("expired")
        self.assertEqual(res.returncode, 1, res.describe())
        vs = u.verdicts(report, "bwrap-gate")
        self.assertTrue(vs["net.udp"]["accepted"]["expired"])
        self.assertEqual(vs["net.udp"]["shown"], "FAIL")
        self.assertEqual(vs["net.tcp-by-ip"]["shown"], "ACCEPTED")
        for text in (self.read("expired", "matrix.md"), self.read("expired", "junit.xml"),
                     res.stdout):  # the terminal wraps long reasons
            self.assertIn("acceptance expired 2000-01-31 (FAIL again): ticket 9: was due",
                          " ".join(text.split()))
        self.assertIn("<failure", self.read("expired", "junit.xml"))

    def test_reports_rerender_byte_for_byte(self):
        for name in self.runs:
            with self.subTest(run=name):
                assert_rerenders_byte_for_byte(self, self.run_of(name)[1])

    def test_validate_expectations(self):
        ok = u.run_sandprobe(["validate", self.expect_ok, self.expect_expired])
        self.assertEqual(ok.returncode, 0, ok.describe())
        self.assertIn("ok     %s (expectations, 3 known FAIL(s))" % self.expect_ok, ok.stdout)
        self.assertRegex(ok.stdout, r"warn   .*expired\.yaml:\d+:\d+: net\.udp expired 2000-01-31")
        base = self.tmp.name
        for name, text, where in [
                ("typo.yaml", "expectations:\n  - probe: net.udp\n    reason: r\n"
                 "    expires: 2099-01-01\n    candidat: x\n", ":5:5: expectations[0].candidat: "
                 "unknown field; did you mean candidate?"),
                ("date.yaml", "expectations:\n  - probe: net.udp\n    reason: r\n"
                 "    expires: 2099-02-30\n", ":4:14: expectations[0].expires: expected a date"),
                ("noreason.yaml", "expectations:\n  - probe: net.udp\n    expires: 2099-01-01\n",
                 ":2:5: expectations[0].reason: required field is missing"),
                ("unknown.yaml", "expectations:\n  - probe: net.udpp\n    reason: r\n"
                 "    expires: 2099-01-01\n", ":2:5: probe: unknown probe id 'net.udpp'")]:
            with self.subTest(file=name):
                path = os.path.join(base, name)
                with open(path, "w") as f:
                    f.write(text)
                r = u.run_sandprobe(["validate", path])
                self.assertEqual(r.returncode, 3, r.describe())
                self.assertIn(path + where, r.stdout)
        # run refuses a bad file before any probe (exit 3).
        r = u.run_sandprobe(["run", "--expect", os.path.join(base, "typo.yaml")])
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("did you mean candidate?", r.stderr)

    def test_report_and_diff_refuse_bad_input(self):
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w") as f:
            f.write('{"generator": "sandprobe", "schema_version": 2, "run_id": 5}')
        r = u.run_sandprobe(["report", bad])
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("bad.json: /run_id: expected a string", r.stderr)
        r = u.run_sandprobe(["diff", bad, bad])
        self.assertEqual(r.returncode, 3, r.describe())


if __name__ == "__main__":
    unittest.main()
