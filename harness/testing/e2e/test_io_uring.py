"""E2E: io_uring as a transport of net.tcp-by-ip, through the real harness and real bubblewrap
with a seccomp filter (`--seccomp FD`, a BPF program this test compiles:
probes/lib/seccomp_bpf.py). The sandboxes share the host's network, so only the filter stands
between the probe and the TCP echo canary on 127.0.0.1.

  local (control)           both transports reach the canary                        -> exposed
  bubblewrap                manifests/bubblewrap.yaml, its own namespace            -> PASS
  seccomp-connect           refuses connect() only: the socket path is EPERM, the io_uring
                            path (IORING_OP_CONNECT/SEND/RECV) reaches the canary   -> FAIL
  seccomp-connect-uring     refuses connect() and io_uring_setup/enter/register     -> PASS
The same two filters with transport [socket] alone are the trap: the connect-only filter PASSes
there, falsely (test_socket_only_passes_the_leaky_filter_falsely).
Needs bubblewrap; the kernel's kernel.io_uring_disabled must be 0 (measured and asserted).
"""
import os
import sys
import unittest

import e2e_util as u

sys.path.insert(0, os.path.join(u.HOME, "probes", "lib"))
import seccomp_bpf  # noqa: E402

FILTERS = {"seccomp-connect": ["connect"],
           "seccomp-connect-uring": ["connect", "io_uring_setup", "io_uring_enter",
                                     "io_uring_register"]}
BOTH = {"target": "{canary.tcp}", "transport": ["socket", "io_uring"], "timeout_s": 2}


def io_uring_disabled():
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            return int(f.read())
    except OSError:
        return None  # a kernel before 6.6: no switch, io_uring always on


def filtered_manifest(base, name, denied):
    path = os.path.join(base, name + ".bpf")
    with open(path, "wb") as f:
        f.write(seccomp_bpf.deny(denied))
    argv = u.manifest_argv(u.BWRAP_MANIFEST)
    argv.insert(argv.index("--unshare-all") + 1, "--share-net")
    at = argv.index("bwrap") + 1  # after the shipped line's env -i and keyring shell
    argv[at:at] = ["--seccomp", "9"]  # bwrap reads the program from fd 9 (opened by the shell)
    return u.write_manifest(os.path.join(base, name + ".yaml"), name,
                            seccomp_bpf.FD9_SHELL + [path] + argv, control=u.LOCAL_MANIFEST,
                            limits={"tmp": "32Mi"},
                            description="bubblewrap --share-net, seccomp refusing " +
                            ", ".join(denied))


def run(cls, name, params):
    base = cls.make_tmp("sandprobe-e2e-io-uring-%s-" % name)
    args = ["--suite", u.write_suite(base, name, ["net.tcp-by-ip"],
                                     {"net.tcp-by-ip": params}),
            "--control", u.LOCAL_MANIFEST, "--sandbox", u.BWRAP_MANIFEST]
    for arm, denied in sorted(FILTERS.items()):
        args += ["--sandbox", filtered_manifest(base, arm, denied)]
    cls.run_once(args + u.FAST_FLAGS, timeout=90)


class BothTransports(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        if io_uring_disabled() not in (0, None):
            raise AssertionError("kernel.io_uring_disabled is %s here: the io_uring path cannot "
                                 "be shown" % io_uring_disabled())
        run(cls, "both", BOTH)

    def cell(self, arm):
        return u.observations(self.report, arm)["net.tcp-by-ip"]

    def verdict(self, arm):
        return u.verdicts(self.report, arm)["net.tcp-by-ip"]["verdict"]

    def transports(self, arm):
        return [(t["transport"], t["outcome"], t["errno"])
                for t in self.cell(arm)["evidence"]["result"]["transports"]]

    def test_the_control_reaches_through_both(self):
        self.assertEqual(self.transports("local"),
                         [("socket", "reached", None), ("io_uring", "reached", None)])
        self.assertEqual(len(self.cell("local")["evidence"]["canary_hits"]), 2)

    def test_a_filter_on_connect_alone_leaks_through_io_uring(self):
        self.assertEqual(self.verdict("seccomp-connect"), "FAIL")
        self.assertEqual(self.transports("seccomp-connect"),
                         [("socket", "blocked", "EPERM"), ("io_uring", "reached", None)])
        hits = self.cell("seccomp-connect")["evidence"]["canary_hits"]
        self.assertEqual(len(hits), 1, hits)  # the io_uring exchange, server-side
        r = self.cell("seccomp-connect")["evidence"]["result"]
        self.assertEqual((r["io_uring_setup"], r["io_uring_disabled"]), ("allowed", 0))

    def test_a_filter_on_io_uring_too_passes(self):
        self.assertEqual(self.verdict("seccomp-connect-uring"), "PASS")
        self.assertEqual(self.transports("seccomp-connect-uring"),
                         [("socket", "blocked", "EPERM"), ("io_uring", "blocked", "EPERM")])
        self.assertEqual(self.cell("seccomp-connect-uring")["evidence_kind"], "positive")

    def test_own_namespace_passes(self):
        self.assertEqual(self.verdict("bubblewrap"), "PASS")
        self.assertEqual(self.transports("bubblewrap"),
                         [("socket", "blocked", "ECONNREFUSED"),
                          ("io_uring", "blocked", "ECONNREFUSED")])


class SocketOnly(u.RunCase):
    """The trap: with the socket transport alone the leaky filter looks as good as the careful
    one."""

    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        run(cls, "socket", {"target": "{canary.tcp}", "transport": ["socket"], "timeout_s": 2})

    def test_socket_only_passes_the_leaky_filter_falsely(self):
        for arm in FILTERS:
            v = u.verdicts(self.report, arm)["net.tcp-by-ip"]
            self.assertEqual(v["verdict"], "PASS", (arm, v["reason"]))
            r = u.observations(self.report, arm)["net.tcp-by-ip"]["evidence"]["result"]
            self.assertEqual(r["errno"], "EPERM")


if __name__ == "__main__":
    unittest.main()
