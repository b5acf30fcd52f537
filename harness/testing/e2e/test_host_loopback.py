"""E2E: net.host-loopback through a real user-mode network. slirp4netns (Debian's) gives a
network namespace of the test's a tap device (10.0.2.100/24, default route via 10.0.2.2) and,
unless told --disable-host-loopback, maps 10.0.2.2 to the host's 127.0.0.1. The harness's
loopback-only TCP canary listens on the host's 127.0.0.1; the suite lets the probe contact
loopback and 10.0.2.0/24 only (and only where it is on a network of the sandbox).

  local (control)           127.0.0.1 is the host's loopback                          -> exposed
  bubblewrap                manifests/bubblewrap.yaml: its own, empty namespace       -> PASS
  slirp-host-loopback       bubblewrap --share-net in a slirp4netns namespace: 10.0.2.2 is the
                            host's loopback, and the canary answers there              -> FAIL
  slirp-no-host-loopback    the same with --disable-host-loopback: 10.0.2.2 refuses
                            (ENETUNREACH)                                             -> PASS
Traffic: the probe sends only to 127.0.0.1 and 10.0.2.2 (slirp's own gateway, inside this
machine); slirp4netns would forward anything else, so nothing else is ever addressed.
Needs root, iproute2, slirp4netns and bubblewrap; fails, never skips, without them.
"""
import os
import secrets
import shutil
import subprocess
import time
import unittest

import e2e_util as u

PARAMS = {"net.host-loopback": {"port": "{canary.loopback_port}",
                                "allow": ["127.0.0.0/8", "10.0.2.0/24"], "timeout_s": 2}}
VARIANTS = {"slirp-host-loopback": [], "slirp-no-host-loopback": ["--disable-host-loopback"]}


class SlirpLab:
    """One named network namespace per variant, each with its own slirp4netns process (started
    and ended here, by pid)."""

    def __init__(self):
        self.tag = secrets.token_hex(3)
        self.namespaces, self.slirps = {}, []

    def create(self, variants):
        for tool in ("ip", "slirp4netns", "bwrap"):
            if shutil.which(tool) is None:
                raise AssertionError("%s is required (ci/bootstrap installs it); this test never "
                                     "skips" % tool)
        if os.geteuid() != 0:
            raise AssertionError("this test makes network namespaces: run it as root")
        for k, (variant, flags) in enumerate(sorted(variants.items())):
            ns = "spsl-%s-%d" % (self.tag, k)
            subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
            self.namespaces[variant] = ns
            slirp = subprocess.Popen(["slirp4netns", "--configure", "--mtu=65520"] + flags +
                                     ["--netns-type=path", "/run/netns/" + ns, "tap0"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.slirps.append(slirp)
            for _ in range(100):  # --configure: tap0 gets its address and the default route
                routes = subprocess.run(["ip", "-n", ns, "route"], capture_output=True,
                                        text=True).stdout
                if "default via 10.0.2.2" in routes or slirp.poll() is not None:
                    break
                time.sleep(0.05)
            if "default via 10.0.2.2" not in routes:
                raise AssertionError("slirp4netns did not configure %s: %s" % (
                    ns, slirp.stderr.read() if slirp.poll() is not None else routes))

    def remove(self):
        for slirp in self.slirps:
            slirp.kill()
            slirp.wait()
            slirp.stderr.close()
        for ns in self.namespaces.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def leftovers(self):
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return [n for n in out.splitlines() if self.tag in n] + [
            s.pid for s in self.slirps if s.poll() is None]


class UserModeGateway(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-host-loopback-")
        cls.lab = SlirpLab()
        cls.addClassCleanup(cls.lab.remove)
        cls.lab.create(VARIANTS)
        args = ["--suite", u.write_suite(base, "host-loopback", ["net.host-loopback"], PARAMS),
                "--control", u.LOCAL_MANIFEST, "--sandbox", u.BWRAP_MANIFEST] + u.FAST_FLAGS
        for variant, ns in sorted(cls.lab.namespaces.items()):
            argv = u.manifest_argv(u.BWRAP_MANIFEST)
            argv.insert(argv.index("--unshare-all") + 1, "--share-net")
            args += ["--sandbox", u.write_manifest(
                os.path.join(base, variant + ".yaml"), variant, ["ip", "netns", "exec", ns] + argv,
                control=u.LOCAL_MANIFEST, limits={"tmp": "32Mi"},
                description="bubblewrap on slirp4netns: " + variant)]
        cls.run_once(args, timeout=120)

    def cell(self, arm):
        return u.observations(self.report, arm)["net.host-loopback"]

    def verdict(self, arm):
        return u.verdicts(self.report, arm)["net.host-loopback"]["verdict"]

    def test_the_control_reaches_the_loopback_canary_directly(self):
        c = self.cell("local")
        self.assertEqual(c["exposure"], "exposed", c["reason"])
        tried = c["evidence"]["result"]["tried"]
        self.assertEqual([(t["address"], t["outcome"]) for t in tried], [("127.0.0.1", "reached")])

    def test_own_namespace_passes(self):
        self.assertEqual(self.verdict("bubblewrap"), "PASS")
        r = self.cell("bubblewrap")["evidence"]["result"]
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("blocked", "positive", "ECONNREFUSED"), r)

    def test_slirp_gateway_is_the_hosts_loopback(self):
        self.assertEqual(self.verdict("slirp-host-loopback"), "FAIL")
        c = self.cell("slirp-host-loopback")
        self.assertEqual(c["label"], "REACHED")
        hits = c["evidence"]["canary_hits"]
        self.assertTrue(hits and all(h["kind"] == "tcp" for h in hits), hits)
        self.assertTrue(all(h["peer"].startswith("127.0.0.1:") for h in hits), hits)
        r = c["evidence"]["result"]
        self.assertEqual([(t["address"], t["outcome"]) for t in r["tried"]],
                         [("127.0.0.1", "blocked"), ("10.0.2.2", "reached")])
        self.assertIn("10.0.2.2", r["detail"])

    def test_disable_host_loopback_passes(self):
        self.assertEqual(self.verdict("slirp-no-host-loopback"), "PASS")
        r = self.cell("slirp-no-host-loopback")["evidence"]["result"]
        self.assertEqual([(t["address"], t["errno"]) for t in r["tried"]],
                         [("127.0.0.1", "ECONNREFUSED"), ("10.0.2.2", "ENETUNREACH")])
        self.assertEqual(r["evidence"], "positive")

    def test_no_leftovers(self):
        self.assertEqual(u.sandprobe_processes(self.report["nonce_hash"]), [])


class SlirpLabRemoval(unittest.TestCase):
    def test_remove_takes_the_namespaces_and_the_slirp_processes(self):
        lab = SlirpLab()
        try:
            lab.create({"x": []})
            self.assertTrue(lab.leftovers())
        finally:
            lab.remove()
        self.assertEqual(lab.leftovers(), [])


if __name__ == "__main__":
    unittest.main()
