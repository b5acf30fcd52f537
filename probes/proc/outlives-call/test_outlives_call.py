"""proc.outlives-call: the detached process outlives the probe without holding its pipes,
heartbeats to the TCP canary once the probe is gone, and ends after hold_s."""
import os
import time
import unittest

from probe_testing import ProbeTestCase, run_probe, tcp_canary


def gone(pid):
    """True when pid has exited (no /proc entry, or a zombie nobody has reaped yet)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except OSError:
        return True


class OutlivesCallProbeTest(ProbeTestCase):
    def test_the_detached_process_outlives_the_probe_and_heartbeats(self):
        c = self.canary(tcp_canary())
        # run_probe reads stdout to EOF: it returns only because the detached process keeps
        # none of the probe's pipes open.
        run = run_probe("proc.outlives-call", {"hold_s": 1, "canary": c.target}, timeout=10)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["alive_at_return"]),
                         ("detached", "absence", True))
        pid = r["detached_pid"]
        self.assertFalse(gone(pid), "the detached process lives on after the probe")
        deadline = time.monotonic() + 5
        while not gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(gone(pid), "the detached process outlived hold_s by far")
        heartbeat = "SANDPROBE %s %s" % (run.nonce, run.invocation)
        self.assertGreaterEqual(len(c.hits), 1)
        self.assertEqual(set(c.hits), {heartbeat})
        self.assertEqual((run.other_lines, run.stderr), ([], ""))

    def test_without_a_canary_it_only_detaches(self):
        run = run_probe("proc.outlives-call", {"hold_s": 0.5}, timeout=10)
        self.assertEqual([x["kind"] for x in run.records], ["start", "result"])
        self.assertEqual(run.records[0]["canary"], "")
        self.assertEqual(run.result["outcome"], "detached")


if __name__ == "__main__":
    unittest.main()
