"""E2E: net.icmp through the real harness, with the harness's ICMP canary (a raw socket) on an
address this test creates: the host end of a veth pair whose other end is in a network
namespace of the test's. The namespace opens ping sockets to every group (as Docker and
systemd's 50-default.conf do) and routes only to that address.

  local (control)    the host: a raw socket pings the canary                          -> exposed
  bubblewrap         manifests/bubblewrap.yaml: its own namespace, no raw socket, no ping
                     group: both sockets refused                                       -> PASS
  icmp-tcp-udp-only  bubblewrap --share-net in the test's namespace whose filter refuses TCP and
                     UDP only: net.tcp-by-ip and net.udp PASS, the echo request carrying the
                     nonce reaches the canary through a ping socket                     -> FAIL
  icmp-all-filtered  the same namespace design with ICMP echo requests dropped too: the ping
                     socket's send fails with EPERM                                     -> PASS
Every packet stays on this machine: the namespaces have one route, to the host end of their veth.
Needs root, iproute2, iptables and bubblewrap; fails, never skips, without them.
"""
import os
import secrets
import shutil
import subprocess
import unittest

import e2e_util as u

ROWS = ["net.icmp", "net.tcp-by-ip", "net.udp"]
PARAMS = {"net.icmp": {"target": "{canary.icmp}", "timeout_s": 1},
          "net.tcp-by-ip": {"target": "{canary.tcp}", "transport": ["socket", "io_uring"],
                            "timeout_s": 1},
          "net.udp": {"target": "{canary.udp}", "timeout_s": 1}}
REFUSE_TCP_UDP = [["-A", "OUTPUT", "-p", proto, "-j", "REJECT", "--reject-with",
                   "icmp-net-unreachable"] for proto in ("tcp", "udp")]
VARIANTS = {"icmp-tcp-udp-only": REFUSE_TCP_UDP,
            # echo requests only: the REJECTs' own ICMP errors must still reach the sandbox
            "icmp-all-filtered": REFUSE_TCP_UDP + [["-A", "OUTPUT", "-p", "icmp", "--icmp-type",
                                                    "echo-request", "-j", "DROP"]]}


class Lab:
    """One veth pair per variant from the host into a namespace of the test's, in a /30 of
    198.18.0.0/15 no interface here uses; every host end carries an address of one /24, and the
    canaries bind the first variant's host end. remove() takes away whatever exists."""

    def __init__(self):
        self.tag = secrets.token_hex(3)
        self.namespaces, self.veths = {}, []

    def create(self, variants):
        for tool in ("ip", "iptables", "bwrap"):
            if shutil.which(tool) is None:
                raise AssertionError("%s is required; this test never skips" % tool)
        if os.geteuid() != 0:
            raise AssertionError("this test makes namespaces and a raw-socket canary: run as root")
        used = u.sh("ip", "-o", "-4", "addr", "show")
        free = [n for n in range(256) if " 198.18.%d." % n not in used]
        octet = free[int(self.tag, 16) % len(free)]
        for k, (variant, rules) in enumerate(sorted(variants.items())):
            ns = "spic-%s-%d" % (self.tag, k)
            host, inner = "spic%s%dh" % (self.tag, k), "spic%s%dn" % (self.tag, k)
            v4 = ["198.18.%d.%d" % (octet, 4 * k + n) for n in (1, 2)]
            u.sh("ip", "netns", "add", ns)
            self.namespaces[variant] = (ns, v4[0])
            self.veths.append(host)
            u.sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
            u.sh("ip", "link", "set", inner, "netns", ns)
            u.sh("ip", "addr", "add", v4[0] + "/30", "dev", host)
            u.sh("ip", "link", "set", host, "up")
            u.sh("ip", "-n", ns, "addr", "add", v4[1] + "/30", "dev", inner)
            u.sh("ip", "-n", ns, "link", "set", inner, "up")
            u.sh("ip", "-n", ns, "link", "set", "lo", "up")
            u.sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647")
            for rule in rules:
                u.sh("ip", "netns", "exec", ns, "iptables", *rule)

    def remove(self):
        for veth in self.veths:
            subprocess.run(["ip", "link", "del", veth], capture_output=True)
        for ns, _ in self.namespaces.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def leftovers(self):
        links = [l for l in u.sh("ip", "-o", "link").splitlines() if "spic" + self.tag in l]
        return links + [n for n in u.sh("ip", "netns", "list").splitlines() if self.tag in n]


class IcmpPastTcpUdpFilters(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-icmp-")
        cls.lab = Lab()
        cls.addClassCleanup(cls.lab.remove)
        cls.lab.create(VARIANTS)
        # One canary address for every arm: the first namespace's host end. The other namespace
        # reaches it through its own veth's host end (the host routes between its addresses).
        cls.canary = cls.lab.namespaces["icmp-all-filtered"][1]
        args = ["--suite", u.write_suite(base, "icmp", ROWS, PARAMS), "--control", u.LOCAL_MANIFEST,
                "--sandbox", u.BWRAP_MANIFEST, "--canary-bind", cls.canary,
                "--canary-bind6", "none"] + u.FAST_FLAGS
        for variant, (ns, gateway) in sorted(cls.lab.namespaces.items()):
            argv = u.manifest_argv(u.BWRAP_MANIFEST)
            argv.insert(argv.index("--unshare-all") + 1, "--share-net")
            path = u.write_manifest(os.path.join(base, variant + ".yaml"), variant,
                                    ["ip", "netns", "exec", ns] + argv, control=u.LOCAL_MANIFEST,
                                    limits={"tmp": "32Mi"},
                                    description="bubblewrap in a namespace: " + variant)
            args += ["--sandbox", path]
            # The namespace's only route: to the canary, through the host end of its veth.
            if gateway != cls.canary:
                u.sh("ip", "-n", ns, "route", "add", cls.canary + "/32", "via", gateway)
        cls.run_once(args, timeout=120)

    def verdicts(self, arm):
        return {p: v["verdict"] for p, v in u.verdicts(self.report, arm).items()}

    def test_the_icmp_canary_stands_on_the_test_address(self):
        note = [n for n in self.report["notes"] if n.startswith("canaries listen on")][0]
        self.assertIn("icmp %s" % self.canary, note)
        local = u.observations(self.report, "local")["net.icmp"]
        self.assertEqual(local["exposure"], "exposed", local["reason"])
        self.assertEqual({h["kind"] for h in local["evidence"]["canary_hits"]}, {"icmp"})

    def test_bubblewrap_refuses_both_sockets(self):
        self.assertEqual(self.verdicts("bubblewrap"), {r: "PASS" for r in ROWS})
        r = u.observations(self.report, "bubblewrap")["net.icmp"]
        self.assertEqual(r["evidence_kind"], "positive", r["reason"])
        self.assertEqual({s["socket"]: s["outcome"] for s in r["evidence"]["result"]["steps"]},
                         {"ping": "refused_socket", "raw": "refused_socket"})

    def test_a_filter_on_tcp_and_udp_only_leaks_icmp(self):
        self.assertEqual(self.verdicts("icmp-tcp-udp-only"),
                         {"net.icmp": "FAIL", "net.tcp-by-ip": "PASS", "net.udp": "PASS"})
        obs = u.observations(self.report, "icmp-tcp-udp-only")
        hits = obs["net.icmp"]["evidence"]["canary_hits"]
        self.assertTrue(hits and {h["kind"] for h in hits} == {"icmp"}, hits)
        self.assertEqual(obs["net.icmp"]["label"], "REACHED")
        ns_addr = self.lab.namespaces["icmp-tcp-udp-only"][1].rsplit(".", 1)
        self.assertEqual(hits[0]["peer"], "%s.%d" % (ns_addr[0], int(ns_addr[1]) + 1))
        steps = {s["socket"]: s for s in obs["net.icmp"]["evidence"]["result"]["steps"]}
        self.assertEqual(steps["ping"]["outcome"], "replied")  # a ping socket, no capability
        self.assertEqual(steps["raw"]["outcome"], "refused_socket")
        # The REJECT answers TCP with net-unreachable; a UDP send fails at once with EPERM.
        for row, errno in (("net.tcp-by-ip", "ENETUNREACH"), ("net.udp", "EPERM")):
            self.assertEqual(obs[row]["evidence"]["result"]["errno"], errno, row)
            self.assertEqual(obs[row]["evidence_kind"], "positive", row)

    def test_a_filter_that_drops_icmp_too_passes(self):
        self.assertEqual(self.verdicts("icmp-all-filtered"), {r: "PASS" for r in ROWS})
        r = u.observations(self.report, "icmp-all-filtered")["net.icmp"]
        self.assertEqual(r["evidence"]["canary_hits"], [])
        # A drop in the sandbox's own OUTPUT chain fails the send at once: EPERM, positive.
        self.assertEqual(r["evidence_kind"], "positive", r["reason"])
        steps = {s["socket"]: (s["outcome"], s["errno"]) for s in r["evidence"]["result"]["steps"]}
        self.assertEqual(steps, {"ping": ("send_failed", "EPERM"),
                                 "raw": ("refused_socket", "EPERM")})

    def test_no_leftovers(self):
        self.assertEqual(u.sandprobe_processes(self.report["nonce_hash"]), [])


if __name__ == "__main__":
    unittest.main()
