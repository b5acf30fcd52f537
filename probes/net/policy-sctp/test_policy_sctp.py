"""net.policy-sctp: on a kernel without SCTP the row is not_testable, whatever the pairs say (no
socket could be made, so nothing was sent)."""
import socket
import unittest

from probe_testing import ProbeTestCase, run_probe, tcp_canary


def kernel_has_sctp():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, getattr(socket, "IPPROTO_SCTP", 132)).close()
        return True
    except OSError:
        return False


class PolicySctpTest(ProbeTestCase):
    @unittest.skipIf(kernel_has_sctp(), "this kernel has SCTP: the not-testable path cannot happen")
    def test_no_sctp_in_the_kernel_is_not_testable(self):
        echo = self.canary(tcp_canary())  # a TCP listener on the port: SCTP must not reach it
        r = run_probe("net.policy-sctp", {"inside": ["in=127.0.0.1:%d/sctp" % echo.port],
                                          "outside": ["out=127.0.0.1:%d/sctp" % echo.port],
                                          "timeout_s": 1}).result
        self.assertEqual((r["outcome"], r["errno"]), ("not_testable", "EPROTONOSUPPORT"), r)
        self.assertTrue(r["detail"].startswith("not testable here: this kernel has no SCTP"), r)
        self.assertEqual(echo.hits, [])
        self.assertEqual({p["connected"] for p in r["pairs"]}, {False})

    @unittest.skipIf(kernel_has_sctp(), "this kernel has SCTP: the not-testable path cannot happen")
    def test_an_outside_answer_beside_an_sctp_pair_is_still_a_leak(self):
        echo = self.canary(tcp_canary())
        r = run_probe("net.policy-sctp", {"inside": ["in=127.0.0.1:%d/sctp" % echo.port],
                                          "outside": ["out=127.0.0.1:%d/tcp" % echo.port],
                                          "timeout_s": 1}).result
        self.assertEqual(r["outcome"], "ignored", r)  # positive evidence is never thrown away


if __name__ == "__main__":
    unittest.main()
