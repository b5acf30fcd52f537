"""platform.runtime-class: the kubernetes driver answers for it; the script in the sandbox only
says not_applicable (the catalogue test checks that rejected/admitted are classified)."""
import unittest

from probe_testing import run_probe


class RuntimeClassProbeTest(unittest.TestCase):
    def test_the_sandbox_side_says_not_applicable(self):
        run = run_probe("platform.runtime-class", {})
        self.assertEqual([r["kind"] for r in run.records], ["start", "result"])
        self.assertEqual((run.result["outcome"], run.result["evidence"]),
                         ("not_applicable", "absence"))
        self.assertEqual((run.returncode, run.other_lines, run.stderr), (0, [], ""))


if __name__ == "__main__":
    unittest.main()
