"""proc.sibling as the runner deploys it: calls 1 and 2 at the same moment, then closing call 3
with both results. Plain processes see and can signal each other; a PID namespace each (bubblewrap)
sees nothing while both are in flight; calls that never overlap are not judged."""
import subprocess
import time
import unittest

from probe_testing import PYTHON, Run, assemble, new_ids, probe_dir

PAIR = {"overlap_s": 1.5}


class SiblingProbeTest(unittest.TestCase):
    def start(self, call, other, nonce, inv, wrap=()):
        script = assemble(probe_dir("proc.sibling"),
                          dict(PAIR, call=call, concurrent_with=other, previous=[]), nonce, inv)
        return subprocess.Popen(list(wrap) + [PYTHON, "-u", "-c", script],
                                stdout=subprocess.PIPE, text=True)

    def finish(self, proc, nonce, inv):
        out, _ = proc.communicate(timeout=30)
        r = Run(nonce, inv, out, "", proc.returncode).result
        self.assertIsNotNone(r)
        return r

    def close(self, pair, nonce, inv):
        script = assemble(probe_dir("proc.sibling"), dict(PAIR, call=3, previous=pair), nonce, inv)
        out = subprocess.run([PYTHON, "-u", "-c", script], capture_output=True, text=True,
                             timeout=30)
        return Run(nonce, inv, out.stdout, out.stderr, out.returncode).result

    def test_plain_processes_see_and_can_signal_each_other(self):
        nonce, inv = new_ids()
        procs = [self.start(1, 2, nonce, inv), self.start(2, 1, nonce, inv)]
        pair = [self.finish(p, nonce, inv) for p in procs]
        self.assertEqual([r["seen_pid"] for r in pair], [procs[1].pid, procs[0].pid])
        self.assertEqual([r["could_signal"] for r in pair], [True, True])
        last = self.close(pair, nonce, inv)
        self.assertEqual((last["outcome"], last["evidence"]), ("sibling_visible", "positive"))
        self.assertIn("call 1 saw call 2 (pid %d) and could signal it" % procs[1].pid,
                      last["detail"])

    def test_a_pid_namespace_each_sees_nothing_while_both_are_in_flight(self):
        wrap = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc",
                "--die-with-parent"]
        nonce, inv = new_ids()
        procs = [self.start(1, 2, nonce, inv, wrap), self.start(2, 1, nonce, inv, wrap)]
        pair = [self.finish(p, nonce, inv) for p in procs]
        self.assertEqual([r["named"] for r in pair], [True, True])
        last = self.close(pair, nonce, inv)
        self.assertEqual((last["outcome"], last["evidence"]), ("isolated", "absence"), last)
        self.assertGreater(last["overlap_s"], 0.5)

    def test_calls_that_never_overlap_are_not_judged(self):
        nonce, inv = new_ids()
        first = self.finish(self.start(1, 2, nonce, inv), nonce, inv)
        time.sleep(0.3)
        second = self.finish(self.start(2, 1, nonce, inv), nonce, inv)
        last = self.close([first, second], nonce, inv)
        self.assertEqual(last["outcome"], "not_concurrent", last)

    def test_a_missing_half_of_the_pair_is_not_judged(self):
        nonce, inv = new_ids()
        self.assertEqual(self.close([None, None], nonce, inv)["outcome"], "no_pair")


if __name__ == "__main__":
    unittest.main()
