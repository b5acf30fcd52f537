"""The harness's own memory does not grow with the output a probe floods (the reliability
benchmark's resources part).

res.output-flood writes 8 MiB and then 256 MiB to stdout through real bubblewrap and the local
control arm. Both arms count every byte (the evidence says so), and the peak resident set of the
sandprobe process itself (VmHWM, ci/bench/lib/harness_usage.py: the harness alone, not the
probes it waits for) with 256 MiB is within 16 MiB of the 8 MiB run's: output is counted and
cut to an excerpt, never kept (docs/design.md, "Probe contract"; docs/traps.md).
"""
import os
import sys
import tempfile
import unittest

import e2e_util as u

sys.path.insert(0, os.path.join(u.HOME, "ci", "bench", "lib"))
import harness_usage  # noqa: E402

SLACK_KIB = 16 * 1024


def flood(base, mib):
    suite = u.write_suite(base, f"flood{mib}", ["res.output-flood"],
                          params={"res.output-flood": {"total_mib": mib}})
    out = os.path.join(base, f"out{mib}")
    m = harness_usage.measure(
        [u.BIN, "run", "--home", u.HOME, "--suite", suite, "--sandbox", u.BWRAP_MANIFEST,
         "--out", out, "--canary-dir", os.path.join(base, f"canary{mib}"), "--format", "json"],
        cwd=base, timeout=240)
    return m, u.load_report(out)


class FloodKeepsHarnessRssFlat(unittest.TestCase):
    def test_256_mib_flood_costs_no_more_memory_than_8(self):
        u.require_bwrap()
        with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-bounds-") as base:
            small, _ = flood(base, 8)
            large, report = flood(base, 256)
        for m in (small, large):
            self.assertIn(m["exit_code"], (0, 1, 2), m)
            self.assertGreater(m["harness_hwm_kib"], 0, m)
        for arm in ("local", "bubblewrap"):
            o = u.observations(report, arm)["res.output-flood"]
            self.assertGreaterEqual(o["evidence"]["stdout_bytes"], 256 << 20, (arm, o["reason"]))
            self.assertLess(len(o["evidence"]["stdout_excerpt"]), 1 << 20, arm)
        growth = large["harness_hwm_kib"] - small["harness_hwm_kib"]
        self.assertLessEqual(growth, SLACK_KIB, f"VmHWM 8 MiB flood {small}, 256 MiB {large}")


if __name__ == "__main__":
    unittest.main()
