"""proc.sibling as the runner deploys it: calls 1 and 2 at the same moment, then closing call 3
with both results. Plain processes see and can signal each other; a PID namespace each (bubblewrap)
sees nothing while both are in flight; calls that never overlap are not judged."""
import unittest

from probe_testing import ConcurrentPairTests, ProbeTestCase, new_ids


class SiblingProbeTest(ConcurrentPairTests, ProbeTestCase):
    PROBE = "proc.sibling"

    def test_plain_processes_see_and_can_signal_each_other(self):
        ids = new_ids()
        procs = self.start_pair(ids)
        pair = [self.finish_call(p, ids) for p in procs]
        self.assertEqual([r["seen_pid"] for r in pair], [procs[1].pid, procs[0].pid])
        self.assertEqual([r["could_signal"] for r in pair], [True, True])
        last = self.close_pair(pair, ids)
        self.assertEqual((last["outcome"], last["evidence"]), ("sibling_visible", "positive"))
        self.assertIn("call 1 saw call 2 (pid %d) and could signal it" % procs[1].pid,
                      last["detail"])

    def test_a_pid_namespace_each_sees_nothing_while_both_are_in_flight(self):
        wrap = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc",
                "--die-with-parent"]
        pair, last = self.run_pair(wrap)
        self.assertEqual([r["named"] for r in pair], [True, True])
        self.assertEqual((last["outcome"], last["evidence"]), ("isolated", "absence"), last)
        self.assertGreater(last["overlap_s"], 0.5)


if __name__ == "__main__":
    unittest.main()
