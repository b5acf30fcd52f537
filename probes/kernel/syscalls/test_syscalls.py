"""kernel.syscalls: per call allowed / reached / refused, judged from errnos, under a filter."""
import unittest

from probe_testing import run_in_bwrap, run_probe

CALLS = ["bpf", "perf_event_open", "keyctl", "io_uring_setup", "unshare", "mount"]


class SyscallsProbeTest(unittest.TestCase):
    def test_every_call_is_listed_with_a_class(self):
        r = run_probe("kernel.syscalls", {"claimed_seccomp": "default"}).result
        self.assertEqual([c["call"] for c in r["calls"]], CALLS)
        for c in r["calls"]:
            self.assertIn(c["result"], ("allowed", "reached", "refused", "not_run"), c)
            if c["result"] == "refused":
                self.assertIn(c["errno"], ("EPERM", "ENOSYS"), c)
        # An unconfined test process reaches the kernel with at least the invalid bpf command and
        # keyctl operation (their own code answers EINVAL / EOPNOTSUPP).
        self.assertEqual(r["outcome"], "reached", r)
        self.assertEqual(r["claimed"], "default")
        self.assertEqual(r["allowed"], [c["call"] for c in r["calls"]
                                        if c["result"] in ("allowed", "reached")])

    def test_in_bubblewrap_nothing_is_filtered(self):
        # bubblewrap installs no seccomp filter unless given one: the calls reach the kernel.
        r = run_in_bwrap("kernel.syscalls", {"claimed_seccomp": ""}).result
        self.assertEqual(r["outcome"], "reached")
        self.assertIn("keyctl", r["allowed"])


if __name__ == "__main__":
    unittest.main()
