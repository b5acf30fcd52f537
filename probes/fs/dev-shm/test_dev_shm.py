"""fs.dev-shm: writes its target in /dev/shm and deletes it, stops at the low-space guard,
cleans up on SIGTERM, and tells a full shm tmpfs (ENOSPC) from a read-only one (EROFS)."""
import os
import unittest

from probe_testing import MIB, ProbeTestCase, run_in_bwrap, run_probe


class DevShmProbeTest(ProbeTestCase):
    def test_dev_shm_small_target_written_and_deleted(self):
        if not os.path.isdir("/dev/shm"):
            raise AssertionError("this host has no /dev/shm")
        run = run_probe("fs.dev-shm", {"target_mib": 16, "step_mib": 4})
        self.assertEqual([p["written_mib"] for p in run.kinds("progress")], [4, 8, 12, 16])
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["written_mib"], r["cleaned_up"]),
                         ("target_written", "positive", 16.0, True))
        self.assertGreater(r["size_mib"], 0)
        self.assertEqual([n for n in os.listdir("/dev/shm") if run.nonce in n], [])

    def test_dev_shm_missing_guarded_and_sigterm(self):
        self.assertMissingDirAndLowSpaceGuard("fs.dev-shm", "not_writable")
        self.assertSigtermCleansUp("fs.dev-shm", {"target_mib": 1024, "step_mib": 1})

    def test_dev_shm_hits_a_small_shm_tmpfs(self):
        r = run_in_bwrap("fs.dev-shm", {"target_mib": 8, "step_mib": 1},
                         extra=["--size", str(4 * MIB), "--tmpfs", "/dev/shm"])
        progress = [p["written_mib"] for p in r.kinds("progress")]
        r = r.result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["cleaned_up"], r["size_mib"]),
                         ("shm_full", "positive", "ENOSPC", True, 4))
        self.assertLessEqual(r["written_mib"], 4)
        self.assertEqual(progress, list(range(1, len(progress) + 1)))  # one record per MiB
        self.assertEqual(progress[-1], r["written_mib"])
        self.assertIn("ENOSPC after", r["detail"])

    def test_dev_shm_read_only_is_erofs(self):
        r = run_in_bwrap("fs.dev-shm", {"target_mib": 8},
                         extra=["--tmpfs", "/dev/shm", "--remount-ro", "/dev/shm"]).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("not_writable", "positive", "EROFS"))


if __name__ == "__main__":
    unittest.main()
