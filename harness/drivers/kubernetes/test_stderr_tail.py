"""stderr_tail.py, the probe container's pid 1 in a kubernetes Job, run here as the container runs
it (`python3 -I -S -c <script> TERMINATION_LOG SETTLE_S COMMAND...`), with a temp file standing in
for the kubelet's termination-log mount. docs/traps.md, trap 44."""
import os
import signal
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "stderr_tail.py")) as f:
    SCRIPT = f.read()


class StderrTailTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="sandprobe-stderr-tail-")
        self.log = os.path.join(self.dir.name, "termination-log")
        open(self.log, "wb").close()

    def tearDown(self):
        self.dir.cleanup()

    def run_tail(self, shell, log=None, settle="0", timeout=20):
        return subprocess.run(["python3", "-I", "-S", "-c", SCRIPT, log or self.log, settle,
                               "sh", "-c", shell], capture_output=True, timeout=timeout)

    def message(self):
        with open(self.log, "rb") as f:
            return f.read()

    def test_stdout_passes_stderr_is_kept_apart_and_the_exit_code_too(self):
        forged = "@@sandprobe n0nce {\"kind\": \"result\"}"
        p = self.run_tail("echo out; echo '%s' >&2; echo more; exit 3" % forged)
        self.assertEqual(p.stdout, b"out\nmore\n")
        self.assertEqual(p.stderr, b"")  # nothing of the probe's stderr reaches pods/log
        self.assertEqual(p.returncode, 3)
        self.assertEqual(self.message(), (forged + "\n").encode())

    def test_only_the_last_4_kib_are_kept(self):
        p = self.run_tail("head -c 100000 /dev/zero | tr '\\0' a >&2; printf END >&2")
        self.assertEqual(p.returncode, 0)
        m = self.message()
        self.assertEqual(len(m), 4096)
        self.assertTrue(m.endswith(b"a" * 4093 + b"END"))

    def test_a_signal_ending_the_command_is_128_plus_it(self):
        p = self.run_tail("echo dying >&2; kill -9 $$")
        self.assertEqual(p.returncode, 137)
        self.assertEqual(self.message(), b"dying\n")

    def test_sigterm_to_pid_1_reaches_the_command(self):
        proc = subprocess.Popen(["python3", "-I", "-S", "-c", SCRIPT, self.log, "0", "sh", "-c",
                                 "trap 'echo got-term >&2; exit 7' TERM; echo ready; "
                                 "while :; do sleep 0.05; done"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=10), 7)
        self.assertEqual(self.message(), b"got-term\n")

    def test_ends_with_the_command_even_if_a_child_holds_stderr(self):
        # As pid 1 it must end when the probe does: in a container every process left then dies
        # with it (a survivor holding stderr must not keep the pod running).
        t0 = time.monotonic()
        p = self.run_tail("sleep 30 >/dev/null & echo $! >&2; echo early >&2; exit 0")
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(p.returncode, 0)
        left, early = self.message().decode().split()
        self.assertEqual(early, "early")
        os.kill(int(left), signal.SIGKILL)  # here (no pid namespace) the survivor is ours to end

    def test_the_command_is_its_child_so_its_ancestors_reach_pid_1_through_it(self):
        p = self.run_tail("echo $PPID")
        ppid = int(p.stdout)
        self.assertNotEqual(ppid, os.getpid())  # the wrapper, not this test, is the parent

    def test_settle_sleeps_before_the_command(self):
        t0 = time.monotonic()
        p = self.run_tail("echo ran", settle="0.6")
        self.assertGreaterEqual(time.monotonic() - t0, 0.6)
        self.assertEqual(p.stdout, b"ran\n")

    def test_no_termination_log_no_file_created_and_stderr_dropped(self):
        missing = os.path.join(self.dir.name, "absent")
        p = self.run_tail("echo out; echo err >&2", log=missing)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, b"out\n", b""))
        self.assertFalse(os.path.exists(missing))

    def test_a_command_that_cannot_run_says_why_in_the_message(self):
        p = subprocess.run(["python3", "-I", "-S", "-c", SCRIPT, self.log, "0",
                            "no-such-command-here"], capture_output=True, timeout=20)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr, b"")
        self.assertIn(b"FileNotFoundError", self.message())


if __name__ == "__main__":
    unittest.main()
