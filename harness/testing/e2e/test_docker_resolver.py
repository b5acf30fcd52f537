"""End-to-end (e2e.docker_resolver): net.dns-resolver, DNS through the sandbox's own resolver (getaddrinfo and
resolv.conf), over UDP and over TCP, on real bubblewrap, runc and gVisor sandboxes.

Every arm is given a resolv.conf or a Docker `Dns` the test controls, pointing at a resolver stub
the test runs (harness/testing/resolver_stub.py) that forwards ONE zone, unique to this run, to
the harness's DNS canary and refuses every other name:
  bwrap-shared-net (control)   shares the host's network, resolv.conf -> stub on 127.53.0.1
  bwrap-own-net                --unshare-net, same resolv.conf: the stub is out of reach (PASS)
  docker-lab-dns               the --internal lab network, Dns -> stub on the lab gateway: the
                               embedded resolver 127.0.0.11 forwards the zone (FAIL; moby #47333,
                               CVE-2024-29018: Debian's 20.10.24 has no fix)
  docker-none-dns              hardened.yaml (--network none) with the same Dns (PASS)
  docker-gvisor-dns            gvisor.yaml (runsc, --network none) with the same Dns (PASS)
Traffic rule: tcpdump on the default-route interface records every DNS packet (port 53/853)
during the runs; none may carry this run's zone."""
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import e2e_util as u
from test_docker import GATEWAY, require_docker

sys.path.insert(0, os.path.join(u.HOME, "harness", "testing"))
from resolver_stub import ResolverStub  # noqa: E402

LOOPBACK_STUB = "127.53.0.1"
DOCKER = os.path.join(u.MANIFESTS, "docker")
ROW = "net.dns-resolver"


def free_port_pair(address):
    """A port free on `address` over UDP and TCP at once (the DNS canary takes both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind((address, 0))
            port = udp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind((address, port))
                except OSError:
                    continue
        return port
    raise AssertionError("no port free over UDP and TCP on %s" % address)


def default_route_interface():
    out = subprocess.run(["ip", "route", "show", "default"], capture_output=True, text=True,
                         check=True).stdout.split()
    if "dev" not in out:
        raise AssertionError("no default route: %r" % out)
    return out[out.index("dev") + 1]


def bwrap_argv(share_net, resolv_conf):
    argv = u.manifest_argv(u.BWRAP_MANIFEST)
    at = argv.index("--remount-ro")
    argv[at:at] = ["--ro-bind", resolv_conf, "/etc/resolv.conf"]
    if share_net:
        argv.insert(argv.index("--unshare-all") + 1, "--share-net")
    return argv


def docker_with_dns(source, name, network=None):
    """A docker manifest's text: renamed, no control of its own, Dns -> the stub on the gateway,
    and optionally another NetworkMode."""
    with open(os.path.join(DOCKER, source)) as f:
        text = f.read()
    text = re.sub(r"(?m)^name: .*$", "name: " + name, text)
    text = re.sub(r"(?m)^control: .*\n", "", text)
    text = re.sub(r"(?m)^description: .*$", "description: %s, NetworkMode %s, Dns %s (the stub)"
                  % (source, network or "as is", GATEWAY), text)
    if network:
        text = re.sub(r"(?m)^    NetworkMode: .*$", "    NetworkMode: " + network, text)
    return text.replace("  hostConfig:\n", '  hostConfig:\n    Dns: ["%s"]\n' % GATEWAY, 1)


class DnsThroughTheResolver(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_docker()
        u.require_bwrap()
        if shutil.which("tcpdump") is None:
            raise AssertionError("tcpdump is required (ci/bootstrap installs it)")
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-dns-resolver-")
        d = cls.tmp.name
        cls.zone = "r%s.sandprobe.test" % secrets.token_hex(4)
        port = free_port_pair(GATEWAY)
        upstream = (GATEWAY, port)
        cls.stubs = {"loopback": ResolverStub(LOOPBACK_STUB, cls.zone, upstream),
                     "gateway": ResolverStub(GATEWAY, cls.zone, upstream)}
        resolv = os.path.join(d, "resolv.conf")
        with open(resolv, "w") as f:
            f.write("nameserver %s\n" % LOOPBACK_STUB)
        control = u.write_manifest(os.path.join(d, "shared.yaml"), "bwrap-shared-net",
                                   bwrap_argv(True, resolv), description="bwrap --share-net")
        arms = ["--control", control,
                "--sandbox", u.write_manifest(os.path.join(d, "own.yaml"), "bwrap-own-net",
                                              bwrap_argv(False, resolv),
                                              description="bwrap --unshare-all")]
        for name, source, network in (("docker-lab-dns", "hardened.yaml", "sandprobe-lab"),
                                      ("docker-none-dns", "hardened.yaml", None),
                                      ("docker-gvisor-dns", "gvisor.yaml", None)):
            path = os.path.join(d, name + ".yaml")
            with open(path, "w") as f:
                f.write(docker_with_dns(source, name, network))
            arms += ["--sandbox", path]
        cls.pcap = os.path.join(d, "dns.pcap")
        cls.iface = default_route_interface()
        cls.tcpdump = subprocess.Popen(
            ["tcpdump", "-i", cls.iface, "-n", "-U", "-w", cls.pcap, "port 53 or port 853"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1)  # tcpdump is listening before the first probe
        cls.reports, cls.results = {}, {}
        try:
            for transport in ("udp", "tcp"):
                suite = u.write_suite(d, "dns-" + transport, [ROW], {ROW: {
                    "zone": cls.zone, "transport": transport, "timeout_s": 8,
                    # 127.0.0.11: Docker's embedded resolver, safe here only because every
                    # docker arm's Dns names the gateway stub (the tcpdump test checks it).
                    "nameservers": "%s,%s,127.0.0.11" % (LOOPBACK_STUB, GATEWAY)}})
                out = os.path.join(d, "out-" + transport)
                cls.results[transport] = u.run_sandprobe(
                    ["run", "--suite", suite, "--out", out, "--canary-dir",
                     os.path.join(d, "canary"), "--jobs", "5", "--canary-bind", GATEWAY,
                     "--canary-dns-port", str(port)] + arms, timeout=180)
                cls.reports[transport] = u.report_or_none(out)
        finally:
            time.sleep(1)  # the last packets reach the capture file
            cls.tcpdump.terminate()
            cls.tcpdump_err = cls.tcpdump.communicate(timeout=10)[1].decode("utf-8", "replace")
            for stub in cls.stubs.values():
                stub.close()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def verdicts(self, transport):
        report = self.reports[transport]
        self.assertIsNotNone(report, self.results[transport].describe())
        return u.verdicts(report, "bwrap-own-net") | {
            "docker-lab-dns": u.verdicts(report, "docker-lab-dns")[ROW],
            "docker-none-dns": u.verdicts(report, "docker-none-dns")[ROW],
            "docker-gvisor-dns": u.verdicts(report, "docker-gvisor-dns")[ROW]}

    def check_transport(self, transport, hit_kind):
        v = self.verdicts(transport)
        self.assertEqual(v[ROW]["verdict"], "PASS", v[ROW])  # bwrap-own-net
        self.assertEqual(v[ROW]["validated_by"], "bwrap-shared-net", v[ROW])
        self.assertEqual(v["docker-lab-dns"]["verdict"], "FAIL", v["docker-lab-dns"])
        self.assertEqual(v["docker-none-dns"]["verdict"], "PASS", v["docker-none-dns"])
        self.assertEqual(v["docker-gvisor-dns"]["verdict"], "PASS", v["docker-gvisor-dns"])
        obs = {o["arm"]: o for o in self.reports[transport]["observations"] if o["probe"] == ROW}
        # The proof is the canary's log: the query for <invocation>.<nonce>.<zone> arrived over
        # the transport asked for, from the stub (forwarding from the host).
        for arm in ("bwrap-shared-net", "docker-lab-dns"):
            hits = obs[arm]["evidence"]["canary_hits"]
            self.assertTrue(hits, obs[arm])
            self.assertEqual({h["kind"] for h in hits}, {hit_kind}, hits)
            self.assertTrue(all(h["detail"].lower().endswith("." + self.zone) for h in hits), hits)
        for arm in ("bwrap-own-net", "docker-none-dns", "docker-gvisor-dns"):
            self.assertEqual(obs[arm]["evidence"]["canary_hits"], [], obs[arm])
            self.assertEqual(obs[arm]["exposure"], "contained", obs[arm])

    def test_udp_the_lab_network_forwards_and_the_closed_arms_do_not(self):
        self.check_transport("udp", "dns")

    def test_tcp_the_same_over_use_vc(self):
        self.check_transport("tcp", "dns-tcp")

    def test_the_lab_arm_was_forwarded_by_dockers_embedded_resolver(self):
        # The gateway stub heard the lab container itself (20.10 forwards a non-loopback Dns from
        # the container's namespace), over both transports, and refused nothing of ours.
        snap = self.stubs["gateway"].snapshot()
        self.assertEqual({t for t, _ in snap["forwarded"]}, {"udp", "tcp"}, snap)
        self.assertTrue(all(c.startswith(GATEWAY.rsplit(".", 1)[0] + ".") and c != GATEWAY
                            for c in snap["clients"]), snap)
        loop = self.stubs["loopback"].snapshot()
        self.assertEqual({t for t, _ in loop["forwarded"]}, {"udp", "tcp"}, loop)

    def test_no_query_of_this_run_left_by_the_default_route(self):
        self.assertIn("listening on %s" % self.iface, self.tcpdump_err)
        text = subprocess.run(["tcpdump", "-n", "-A", "-r", self.pcap], capture_output=True,
                              text=True, errors="replace")
        self.assertEqual(text.returncode, 0, text.stderr)
        label = self.zone.split(".")[0]
        self.assertNotIn(label, text.stdout.lower(), "a probe query left by %s" % self.iface)


if __name__ == "__main__":
    unittest.main()
