"""res.cpu-loop: spins with heartbeats until killed, stops when orphaned, gives up at max_s."""
import os
import signal
import subprocess
import time
import unittest

from probe_testing import (PYTHON, Run, assemble, descriptor, new_ids, probe_dir, run_probe,
                           start_probe)


class CpuLoopProbeTest(unittest.TestCase):
    def test_a_kill_is_contained_and_the_deadline_exposed(self):
        # A loop the sandbox kills is contained; one that only the harness deadline ends is not.
        classify = descriptor("res.cpu-loop")["classify"]
        self.assertEqual((classify["killed"], classify["deadline"]), ("contained", "exposed"))

    def test_cpu_loop_runs_until_killed_and_leaves_progress(self):
        proc, nonce, invocation = start_probe("res.cpu-loop", {"heartbeat_s": 0.5, "max_s": 30})
        time.sleep(2)
        proc.kill()
        out, err = proc.communicate()
        run = Run(nonce, invocation, out, err, proc.returncode)
        self.assertEqual(run.returncode, -signal.SIGKILL)
        self.assertEqual(run.records[0]["kind"], "start")
        elapsed = [p["elapsed_s"] for p in run.kinds("progress")]
        self.assertGreaterEqual(len(elapsed), 2)
        self.assertEqual(elapsed, sorted(elapsed))
        self.assertEqual(run.kinds("result"), [])

    def test_cpu_loop_stops_when_orphaned(self):
        script = assemble(probe_dir("res.cpu-loop"), {"heartbeat_s": 0.2, "max_s": 30},
                          new_ids()[0], "i1")
        # The shell is the probe's parent and exits after 0.5 s; the pipe reaches EOF only
        # when the orphaned probe has stopped too.
        proc = subprocess.Popen(["sh", "-c", '"$1" -u -c "$2" & sleep 0.5', "sh", PYTHON, script],
                                stdout=subprocess.PIPE, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=10)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the orphan, should the guard fail
            except ProcessLookupError:
                pass
        self.assertIn(b'"kind":"progress"', out)

    def test_cpu_loop_safety_net(self):
        run = run_probe("res.cpu-loop", {"heartbeat_s": 0.2, "max_s": 0.5}, timeout=10)
        self.assertEqual(run.returncode, 3)
        self.assertEqual(run.kinds("progress")[-1]["gave_up"], "max_s reached")
        self.assertEqual(run.kinds("result"), [])


if __name__ == "__main__":
    unittest.main()
