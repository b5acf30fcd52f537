"""net.tcp-by-ip: only the canary's echo is reached; connect() alone is not; a refusal on
loopback, or in a sandbox's own network namespace, is blocked."""
import os
import tempfile
import unittest

import seccomp_bpf
from probe_testing import BWRAP, ProbeTestCase, run_probe, tcp_canary


def in_bwrap_with_filter(denied, params):
    """The probe in bubblewrap sharing the host's network, under a seccomp filter refusing
    `denied` (EPERM)."""
    with tempfile.NamedTemporaryFile(suffix=".bpf") as f:
        f.write(seccomp_bpf.deny(denied))
        f.flush()
        at = BWRAP.index("--unshare-all") + 1
        argv = BWRAP[:at] + ["--share-net", "--seccomp", "9"] + BWRAP[at:]
        run = run_probe("net.tcp-by-ip", params, python="python3",
                        prefix=seccomp_bpf.FD9_SHELL + [f.name] + argv)
    if not run.records:
        raise AssertionError("bwrap could not run the probe: %s" % run.stderr)
    return run.result


class TcpByIpProbeTest(ProbeTestCase):
    def test_tcp_echo_reached(self):
        c = self.canary(tcp_canary())
        run = run_probe("net.tcp-by-ip", {"target": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_echo"], r["connected"]),
                         ("reached", "positive", True, True))
        self.assertEqual(c.hits, ["SANDPROBE %s %s" % (run.nonce, run.invocation)])

    def test_tcp_connect_without_echo_is_not_reached(self):
        c = self.canary(tcp_canary(echo=False))
        r = run_probe("net.tcp-by-ip", {"target": c.target, "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"], r["connected"], r["reply_bytes"]),
                         ("no_echo", "absence", True, 0))

    def test_refused_on_loopback_is_blocked(self):
        self.assertRefusedOnLoopbackIsBlocked("net.tcp-by-ip", "target")

    def test_tcp_by_ip_is_blocked_although_the_canary_listens(self):
        self.assertBlockedOnlyInBwrap("net.tcp-by-ip", tcp_canary())


    def test_io_uring_reaches_the_canary(self):
        c = self.canary(tcp_canary())
        run = run_probe("net.tcp-by-ip", {"target": c.target, "transport": ["io_uring"],
                                          "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["transport"], r["io_uring_setup"], r["canary_echo"]),
                         ("reached", "io_uring", "allowed", True), r)
        self.assertEqual(c.hits, ["SANDPROBE %s %s" % (run.nonce, run.invocation)])

    def test_io_uring_refused_on_loopback_is_blocked(self):
        self.assertRefusedOnLoopbackIsBlocked("net.tcp-by-ip", "target", transport=["io_uring"])

    def test_a_filter_on_connect_alone_is_passed_by_io_uring(self):
        c = self.canary(tcp_canary())
        plain = in_bwrap_with_filter(["connect"], {"target": c.target, "timeout_s": 2})
        self.assertEqual((plain["outcome"], plain["evidence"], plain["errno"]),
                         ("blocked", "positive", "EPERM"), plain)
        ring = in_bwrap_with_filter(["connect"], {"target": c.target, "timeout_s": 2,
                                                  "transport": ["io_uring"]})
        self.assertEqual(ring["outcome"], "reached", ring)
        self.assertEqual(len(c.hits), 1)  # io_uring's exchange only

    def test_a_filter_on_io_uring_too_blocks_it(self):
        c = self.canary(tcp_canary())
        r = in_bwrap_with_filter(["connect", "io_uring_setup", "io_uring_enter",
                                  "io_uring_register"],
                                 {"target": c.target, "timeout_s": 2, "transport": ["io_uring"]})
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["io_uring_setup"]),
                         ("blocked", "positive", "EPERM", "EPERM"), r)
        self.assertEqual(c.hits, [])

    def test_both_transports_the_most_exposed_decides(self):
        c = self.canary(tcp_canary())
        r = in_bwrap_with_filter(["connect"], {"target": c.target, "timeout_s": 2,
                                               "transport": ["socket", "io_uring"]})
        self.assertEqual((r["outcome"], r["transport"]), ("reached", "io_uring"), r)
        self.assertEqual([(t["transport"], t["outcome"], t["errno"]) for t in r["transports"]],
                         [("socket", "blocked", "EPERM"), ("io_uring", "reached", None)])
        self.assertEqual(r["detail"], "socket: blocked (EPERM); io_uring: reached")

    def test_an_unknown_transport_is_an_error(self):
        r = run_probe("net.tcp-by-ip", {"target": "127.0.0.1:9", "transport": ["carrier"]}).result
        self.assertEqual((r["outcome"], r["errno"]), ("error", "EINVAL"))


if __name__ == "__main__":
    unittest.main()
