"""net.icmp: the echo request carries the nonce to a raw-socket listener on 127.0.0.1 (the ICMP
canary's twin), through the raw socket (root) and, where ping_group_range allows, a ping socket;
in bubblewrap's own namespace with no capabilities both sockets are refused."""
import os
import select
import socket
import threading
import unittest

from probe_testing import ProbeTestCase, run_in_bwrap, run_probe


class RawListener:
    """Echo requests to 127.0.0.1 seen on a raw socket (as the harness's ICMP canary sees them):
    the data of each one that carries `marker`."""

    def __init__(self, marker):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        self.sock.bind(("127.0.0.1", 0))
        self.marker, self.hits, self.stop = marker, [], False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            if select.select([self.sock], [], [], 0.1)[0]:
                packet = self.sock.recv(4096)
                icmp = packet[(packet[0] & 0x0f) * 4:]
                if icmp[:1] == b"\x08" and self.marker in icmp:
                    self.hits.append(icmp[8:])

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


class IcmpProbeTest(ProbeTestCase):
    def test_no_target_sends_nothing(self):
        self.assertNoTargetSendsNothing("net.icmp")

    def test_a_name_is_no_target(self):
        r = run_probe("net.icmp", {"target": "localhost"}).result
        self.assertEqual((r["outcome"], r["errno"]), ("error", "EINVAL"))

    @unittest.skipUnless(os.geteuid() == 0, "a raw socket needs root")
    def test_the_echo_request_carries_the_nonce_to_the_listener(self):
        listener = RawListener(b"SANDPROBE ")
        self.addCleanup(listener.close)
        run = run_probe("net.icmp", {"target": "127.0.0.1", "timeout_s": 1})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"]), ("replied", "positive"), r)
        steps = {s["socket"]: s for s in r["steps"]}
        self.assertEqual(steps["raw"]["outcome"], "replied")
        low, high = r["ping_group_range"]
        want_ping = "replied" if low <= os.getgid() <= high else "refused_socket"
        self.assertEqual(steps["ping"]["outcome"], want_ping, steps["ping"])
        tag = ("SANDPROBE %s %s\n" % (run.nonce, run.invocation)).encode()
        self.assertIn(tag, listener.hits)

    def test_bubblewrap_without_capabilities_cannot_open_either_socket(self):
        r = run_in_bwrap("net.icmp", {"target": "127.0.0.1", "timeout_s": 1},
                         extra=["--cap-drop", "ALL"]).result
        self.assertEqual((r["outcome"], r["evidence"]), ("blocked", "positive"), r)
        self.assertEqual({s["socket"]: s["outcome"] for s in r["steps"]},
                         {"ping": "refused_socket", "raw": "refused_socket"})


if __name__ == "__main__":
    unittest.main()
