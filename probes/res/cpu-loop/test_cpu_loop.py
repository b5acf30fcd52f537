"""res.cpu-loop: spins with heartbeats until killed, outlives its parent, gives up at max_s."""
import os
import signal
import socket
import subprocess
import threading
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
        # The start record and two progress records, however long a loaded machine (and the
        # loop's nice 19) makes them take; then the kill.
        timer = threading.Timer(25, proc.kill)
        timer.start()
        lines = [proc.stdout.readline() for _ in range(3)]
        timer.cancel()
        proc.kill()
        out, err = proc.communicate()
        run = Run(nonce, invocation, "".join(lines) + out, err, proc.returncode)
        self.assertEqual(run.returncode, -signal.SIGKILL)
        self.assertEqual(run.records[0]["kind"], "start")
        elapsed = [p["elapsed_s"] for p in run.kinds("progress")]
        self.assertGreaterEqual(len(elapsed), 2)
        self.assertEqual(elapsed, sorted(elapsed))
        self.assertEqual(run.kinds("result"), [])

    def test_cpu_loop_runs_at_the_lowest_priority(self):
        # A loop at nice 0 starved the probes running beside it into their deadlines (trap 41):
        # it lowers its own priority before it spins, and says so in its start record.
        proc, nonce, invocation = start_probe("res.cpu-loop", {"heartbeat_s": 0.5, "max_s": 30})
        first = proc.stdout.readline()  # the start record: written after the priority change
        with open(f"/proc/{proc.pid}/stat") as f:
            nice = int(f.read().rsplit(")", 1)[1].split()[16])  # field 19: nice
        proc.kill()
        out, err = proc.communicate()
        run = Run(nonce, invocation, first + out, err, proc.returncode)
        self.assertEqual(nice, 19)
        self.assertEqual(run.records[0]["nice"], 19)

    def test_cpu_loop_ignores_its_parents_death_and_keeps_beating(self):
        # Real code ignores its parent's death: a service that kills only the shell must see the
        # loop live on. The orphan keeps sending heartbeats to the TCP canary until max_s.
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        listener.settimeout(5)
        port = listener.getsockname()[1]
        nonce, invocation = new_ids()
        script = assemble(probe_dir("res.cpu-loop"),
                          {"heartbeat_s": 0.2, "max_s": 3, "canary": "127.0.0.1:%d" % port},
                          nonce, invocation)
        # The shell is the probe's parent and exits after 0.3 s; the loop must outlive it.
        proc = subprocess.Popen(["sh", "-c", '"$1" -u -c "$2" & sleep 0.3', "sh", PYTHON, script],
                                stdout=subprocess.PIPE, start_new_session=True)
        beats_after = []
        try:
            proc.wait(timeout=5)  # the shell is gone; the orphan holds the pipe
            shell_gone = time.monotonic()
            while len(beats_after) < 3:
                conn, _ = listener.accept()
                with conn:
                    line = conn.recv(256).decode()
                beats_after.append((time.monotonic() - shell_gone, line))
            out = proc.stdout.read()  # EOF once the orphan gives up at max_s
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the orphan, should max_s fail
            except ProcessLookupError:
                pass
            listener.close()
        self.assertEqual([line for _, line in beats_after],
                         ["SANDPROBE %s %s\n" % (nonce, invocation)] * 3)
        self.assertGreater(beats_after[-1][0], 0.5)  # beating well after its parent died
        self.assertIn(b'"gave_up":"max_s reached"', out)

    def test_cpu_loop_safety_net(self):
        run = run_probe("res.cpu-loop", {"heartbeat_s": 0.2, "max_s": 0.5}, timeout=10)
        self.assertEqual(run.returncode, 3)
        self.assertEqual(run.kinds("progress")[-1]["gave_up"], "max_s reached")
        self.assertEqual(run.kinds("result"), [])


if __name__ == "__main__":
    unittest.main()
