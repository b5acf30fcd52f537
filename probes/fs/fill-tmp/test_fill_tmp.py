"""fs.fill-tmp: writes its target and deletes it, stops at the low-space guard, cleans up on
SIGTERM, and fails with ENOSPC on a tmpfs smaller than the target."""
import os
import tempfile
import unittest

from probe_testing import MIB, ProbeTestCase, descriptor, run_in_bwrap, run_probe


class FillTmpProbeTest(ProbeTestCase):
    def test_sized_params_follow_the_claimed_limits(self):
        d = descriptor("fs.fill-tmp")
        spec = d["params"]["target_mib"]
        self.assertEqual((spec["from_limit"], spec["factor"], spec["unit"]), ("tmp", 2, "MiB"))
        self.assertEqual(d["classify"]["killed"], "contained")

    def test_fill_writes_the_target_and_deletes_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = run_probe("fs.fill-tmp", {"dir": tmp, "target_mib": 8, "chunk_mib": 1})
            self.assertEqual(os.listdir(tmp), [])
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["written_mib"], r["cleaned_up"]),
                         ("target_written", "positive", 8.0, True))

    def test_hold_keeps_the_file_then_deletes_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = run_probe("fs.fill-tmp", {"dir": tmp, "target_mib": 2, "chunk_mib": 1,
                                            "hold_s": 0.5})
            self.assertEqual(os.listdir(tmp), [])
        holding = [r for r in run.records if r.get("holding_s")]
        self.assertEqual(len(holding), 1, run.records)
        self.assertEqual(holding[0]["written_mib"], 2)
        self.assertEqual((run.result["outcome"], run.result["cleaned_up"]),
                         ("target_written", True))

    def test_fill_reports_progress_and_cleans_up_on_sigterm(self):
        line = self.assertSigtermCleansUp("fs.fill-tmp", {"target_mib": 1024, "chunk_mib": 1})
        self.assertIn('"written_mib":32', line)

    def test_fill_failure_and_guard(self):
        self.assertMissingDirAndLowSpaceGuard("fs.fill-tmp", "write_failed")

    def test_fill_tmp_hits_a_small_tmpfs(self):
        r = run_in_bwrap("fs.fill-tmp", {"dir": "/tmp", "target_mib": 8, "chunk_mib": 1},
                         extra=["--size", str(4 * MIB), "--tmpfs", "/tmp"]).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["cleaned_up"]),
                         ("write_failed", "positive", "ENOSPC", True))
        self.assertLessEqual(r["written_mib"], 4)


if __name__ == "__main__":
    unittest.main()
