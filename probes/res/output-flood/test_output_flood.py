"""res.output-flood: whole lines, progress every 8 MiB, then one result."""
import unittest

from probe_testing import MIB, run_probe


class OutputFloodProbeTest(unittest.TestCase):
    def test_writes_whole_lines_then_a_result(self):
        run = run_probe("res.output-flood", {"total_mib": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["written_bytes"]), ("written", 2 * MIB))
        self.assertEqual(len(run.other_lines), 2 * MIB // 1024)
        self.assertEqual(set(run.other_lines), {"f" * 1023})
        self.assertGreaterEqual(len(run.stdout.encode()), 2 * MIB)
        self.assertEqual(run.records[0]["kind"], "start")

    def test_progress_every_8_mib_and_zero_writes_nothing(self):
        run = run_probe("res.output-flood", {"total_mib": 17})
        self.assertEqual([p["written_mib"] for p in run.kinds("progress")], [8, 16])
        zero = run_probe("res.output-flood", {"total_mib": 0})
        self.assertEqual((zero.result["written_bytes"], zero.other_lines), (0, []))


if __name__ == "__main__":
    unittest.main()
