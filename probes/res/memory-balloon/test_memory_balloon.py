"""res.memory-balloon: reaches a small target step by step; under an address-space limit it
stops at MemoryError, its last progress record matching the result."""
import resource
import unittest

from probe_testing import descriptor, run_probe


class MemoryBalloonProbeTest(unittest.TestCase):
    def test_sized_params_follow_the_claimed_limits(self):
        d = descriptor("res.memory-balloon")
        spec = d["params"]["target_mib"]
        self.assertEqual((spec["from_limit"], spec["factor"], spec["unit"]),
                         ("memory", 2, "MiB"))
        self.assertEqual(d["classify"]["killed"], "contained")

    def test_balloon_reaches_a_small_target_step_by_step(self):
        run = run_probe("res.memory-balloon", {"target_mib": 64, "step_mib": 16})
        self.assertEqual([p["allocated_mib"] for p in run.kinds("progress")], [16, 32, 48, 64])
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["allocated_mib"]),
                         ("target_reached", "positive", 64))

    def test_balloon_under_an_address_space_limit_hits_memory_error(self):
        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (200_000_000, 200_000_000))
        run = run_probe("res.memory-balloon", {"target_mib": 512, "step_mib": 16},
                        preexec_fn=limit)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("memory_error", "positive", "MemoryError"))
        self.assertLess(r["allocated_mib"], 200)
        self.assertEqual(run.kinds("progress")[-1]["allocated_mib"], r["allocated_mib"])


if __name__ == "__main__":
    unittest.main()
