"""End-to-end on the real daemon: the network paths a careful-looking container still leaves,
each row against docker-hardened with one change (test_docker_weakened.hardened_with). The
canaries bind the --internal lab network's gateway; the loopback-only TCP canary stays on the
host's 127.0.0.1; traffic stays on loopback and the lab network.

  docker-hardened          --network none: every row PASS
  dk-lab-no-caps           on the lab network, CapDrop ALL, uid 65534: Docker opens ping sockets
                           to every group (net.ipv4.ping_group_range), so the echo request
                           carrying the nonce reaches the ICMP canary      -> net.icmp FAIL
  dk-host-network          NetworkMode host: 127.0.0.1 is the host's        -> net.host-loopback FAIL
  dk-seccomp-connect       lab network, a seccomp profile refusing connect() only: the socket
                           path is EPERM, io_uring's IORING_OP_CONNECT reaches the canary
                                                                            -> net.tcp-by-ip FAIL
  dk-seccomp-connect-uring the profile refuses io_uring_setup/enter/register too
                                                                            -> net.tcp-by-ip PASS
net.host-loopback on the lab network (dk-lab-no-caps): the gateway 172.30.99.1 is the host,
but the canary is on its loopback only: refused, PASS.
"""
import json
import os
import tempfile
import unittest

import e2e_util as u
from test_docker import GATEWAY, require_docker
from test_docker_weakened import hardened_with

ROWS = ["net.icmp", "net.host-loopback", "net.tcp-by-ip"]
PARAMS = {"net.icmp": {"target": "{canary.icmp}"},
          "net.host-loopback": {"port": "{canary.loopback_port}",
                                "allow": ["127.0.0.0/8", "{canary.host}/24"]},
          "net.tcp-by-ip": {"target": "{canary.tcp}", "transport": ["socket", "io_uring"]}}
LAB = {"NetworkMode": "sandprobe-lab",
       "ExtraHosts": json.dumps(["sandprobe-canary:%s" % GATEWAY,
                                 "host.docker.internal:%s" % GATEWAY])}


def seccomp(denied):
    profile = {"defaultAction": "SCMP_ACT_ALLOW",
               "syscalls": [{"names": denied, "action": "SCMP_ACT_ERRNO"}]}
    return dict(LAB, SecurityOpt=json.dumps(["no-new-privileges",
                                             "seccomp=" + json.dumps(profile)]))


VARIANTS = {
    # name: (HostConfig changes, {row: verdict other than PASS})
    "dk-lab-no-caps": (LAB, {"net.icmp": "FAIL", "net.tcp-by-ip": "FAIL"}),
    # The host's namespace keeps the host's ping_group_range ("1 0" here: no group) and the
    # capabilities are dropped, so ICMP stays shut; its 127.0.0.1 is the host's.
    "dk-host-network": ({"NetworkMode": "host"},
                        {"net.host-loopback": "FAIL", "net.tcp-by-ip": "FAIL"}),
    "dk-seccomp-connect": (seccomp(["connect"]), {"net.icmp": "FAIL", "net.tcp-by-ip": "FAIL"}),
    "dk-seccomp-connect-uring": (seccomp(["connect", "io_uring_setup", "io_uring_enter",
                                          "io_uring_register"]), {"net.icmp": "FAIL"}),
}


class NetPaths(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_docker()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-docker-paths-")
        base = cls.tmp.name
        args = ["run", "--suite", u.write_suite(base, "paths", ROWS, PARAMS),
                "--out", os.path.join(base, "out"), "--canary-dir", os.path.join(base, "canary"),
                "--jobs", "4", "--control", u.LOCAL_MANIFEST,
                "--control", os.path.join(u.MANIFESTS, "docker", "open.yaml"),
                "--sandbox", os.path.join(u.MANIFESTS, "docker", "hardened.yaml"),
                "--canary-bind", GATEWAY]
        for name, (changes, _) in VARIANTS.items():
            path = os.path.join(base, name + ".yaml")
            with open(path, "w") as f:
                f.write(hardened_with(name, changes))
            args += ["--sandbox", path]
        cls.res = u.run_sandprobe(args, timeout=240)
        cls.report = u.report_or_none(os.path.join(base, "out"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.assertIsNotNone(self.report, self.res.describe())

    def cell(self, arm, row):
        return u.observations(self.report, arm)[row]

    def test_verdicts(self):
        want = {"docker-hardened": {}}
        want.update({n: fails for n, (_, fails) in VARIANTS.items()})
        for arm, changed in want.items():
            got = {p: v["verdict"] for p, v in u.verdicts(self.report, arm).items()}
            with self.subTest(arm=arm):
                self.assertEqual(got, {r: changed.get(r, "PASS") for r in ROWS},
                                 {p: v["reason"] for p, v in u.verdicts(self.report, arm).items()})

    def test_ping_socket_without_capabilities_reaches_the_icmp_canary(self):
        c = self.cell("dk-lab-no-caps", "net.icmp")
        self.assertEqual({h["kind"] for h in c["evidence"]["canary_hits"]}, {"icmp"})
        steps = {s["socket"]: s for s in c["evidence"]["result"]["steps"]}
        self.assertEqual((steps["ping"]["outcome"], steps["raw"]["errno"]),
                         ("replied", "EPERM"))  # no CAP_NET_RAW: the ping socket is enough
        self.assertEqual(c["evidence"]["result"]["ping_group_range"], [0, 2147483647])

    def test_host_network_reaches_the_loopback_only_canary(self):
        r = self.cell("dk-host-network", "net.host-loopback")["evidence"]["result"]
        self.assertEqual((r["tried"][0]["address"], r["tried"][0]["outcome"]),
                         ("127.0.0.1", "reached"))
        lab = self.cell("dk-lab-no-caps", "net.host-loopback")["evidence"]["result"]
        self.assertIn((GATEWAY, "ECONNREFUSED"), [(t["address"], t["errno"])
                                                  for t in lab["tried"]])
        self.assertEqual(lab["outcome"], "blocked")

    def test_io_uring_passes_a_profile_that_refuses_connect_only(self):
        def transports(arm):
            r = self.cell(arm, "net.tcp-by-ip")["evidence"]["result"]
            return [(t["transport"], t["outcome"], t["errno"]) for t in r["transports"]]
        self.assertEqual(transports("dk-seccomp-connect"),
                         [("socket", "blocked", "EPERM"), ("io_uring", "reached", None)])
        self.assertEqual(transports("dk-seccomp-connect-uring"),
                         [("socket", "blocked", "EPERM"), ("io_uring", "blocked", "EPERM")])


if __name__ == "__main__":
    unittest.main()
