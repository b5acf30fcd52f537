"""verdict_flips: two hand-made report.json files that differ count as a flip; equal ones do not."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import verdict_flips as vf

HERE = os.path.dirname(os.path.abspath(__file__))


def report(balloon="PASS", balloon_kind="positive", control="exposed", second_dns=None):
    obs = [{"arm": "local", "probe": "net.dns", "exposure": control, "evidence_kind": "positive"},
           {"arm": "bwrap", "probe": "net.dns", "exposure": "contained",
            "evidence_kind": "positive"},
           {"arm": "local", "probe": "res.memory-balloon", "exposure": "exposed",
            "evidence_kind": "positive"},
           {"arm": "bwrap", "probe": "res.memory-balloon", "exposure": "contained",
            "evidence_kind": balloon_kind}]
    verdicts = [{"probe": "net.dns", "candidate": "bwrap", "verdict": "PASS",
                 "evidence_kind": "positive"},
                {"probe": "res.memory-balloon", "candidate": "bwrap", "verdict": balloon,
                 "evidence_kind": balloon_kind}]
    if second_dns:  # the same probe listed twice in a suite
        verdicts.append({"probe": "net.dns", "candidate": "bwrap", "verdict": second_dns,
                         "evidence_kind": "positive"})
    return {"arms": [{"name": "bwrap", "role": "candidate"}, {"name": "local", "role": "control"}],
            "observations": obs, "verdicts": verdicts}


class VerdictFlipsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, rep):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(rep, f)
        return path

    def test_equal_reports_have_no_flip(self):
        runs = vf.load([self.write("a.json", report()), self.write("b.json", report())])
        counts = vf.tally(runs)
        self.assertEqual(len(counts), 4)  # 2 verdict rows + 2 control rows
        self.assertEqual(vf.flipped(counts), {})

    def test_a_differing_verdict_is_one_flip(self):
        runs = vf.load([self.write("a.json", report()),
                        self.write("b.json", report(balloon="INCONCLUSIVE", balloon_kind="none")),
                        self.write("c.json", report())])
        flips = vf.flipped(vf.tally(runs))
        self.assertEqual(list(flips), ["bwrap res.memory-balloon"])
        self.assertEqual(vf.describe(flips["bwrap res.memory-balloon"]),
                         "PASS/positive x2, INCONCLUSIVE/none x1")

    def test_evidence_kind_alone_flips(self):
        runs = [vf.row_states(report()), vf.row_states(report(balloon_kind="absence"))]
        self.assertEqual(list(vf.flipped(vf.tally(runs))), ["bwrap res.memory-balloon"])

    def test_control_exposure_flips_and_missing_rows_count(self):
        runs = [vf.row_states(report()), vf.row_states(report(control="contained")),
                vf.row_states(report(second_dns="FAIL"))]
        flips = vf.flipped(vf.tally(runs))
        self.assertEqual(sorted(flips), ["bwrap net.dns #2", "local net.dns"])
        self.assertEqual(flips["bwrap net.dns #2"]["missing"], 2)

    def test_label_flips_apart_from_verdicts(self):
        a, b = report(), report()
        a["observations"][3]["label"] = "OOM killed"
        b["observations"][3]["label"] = "SIGKILL"
        self.assertEqual(vf.flipped(vf.tally([vf.row_states(a), vf.row_states(b)])), {})
        labels = vf.flipped(vf.tally([vf.row_labels(a), vf.row_labels(b)]))
        self.assertEqual(list(labels), ["bwrap res.memory-balloon"])

    def test_between_conditions(self):
        idle = vf.tally([vf.row_states(report())] * 2)
        load = vf.tally([vf.row_states(report(balloon="FAIL"))] * 2)
        self.assertEqual(vf.between(idle, load),
                         {"bwrap res.memory-balloon": ("PASS/positive", "FAIL/positive")})
        self.assertEqual(vf.between(idle, idle), {})

    def test_baseline_report_rows(self):
        # A report the harness wrote (reports/baselines/normal.json): its duplicate balloon rows
        # are told apart, and two copies of it do not flip.
        path = os.path.join(HERE, "..", "..", "..", "reports", "baselines", "normal.json")
        states = vf.load([path])[0]
        self.assertIn("local res.memory-balloon #2", states)
        self.assertEqual(vf.flipped(vf.tally(vf.load([path, path]))), {})

    def test_command_line(self):
        a, b = self.write("a.json", report()), self.write("b.json", report(balloon="FAIL"))
        out = subprocess.run([sys.executable, os.path.join(HERE, "verdict_flips.py"), a, b],
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(json.loads(out)["flips"],
                         {"bwrap res.memory-balloon": {"PASS/positive": 1, "FAIL/positive": 1}})


if __name__ == "__main__":
    unittest.main()
