"""End-to-end: the cloud metadata rows through real bubblewrap, with the harness's
canaries standing where clouds put their metadata services, on addresses this test creates: an
interface of its own (a dummy, or an empty bridge where the kernel has no dummy driver) carrying
100.100.100.200 and fd00:ec2::254, never 169.254.169.254. `sandprobe run --canary-bind
100.100.100.200 --canary-bind6 fd00:ec2::254` puts the HTTP canaries there (they answer as AWS
IMDSv2, GCP and Azure do and serve a planted canary credential).

Candidates, each bubblewrap with one network design (the control is the local process, which
reaches both addresses):
  bubblewrap      manifests/bubblewrap.yaml: its own empty network namespace   -> every row PASS
  md-open         bubblewrap --share-net in a network namespace of the test's, a veth to the host
                  and routes to the two addresses, no filter                   -> every row FAIL
  md-v4-only      the same, with an iptables rule refusing IPv4 to 100.100.100.200 and no
                  ip6tables rule: the IPv6 endpoint leaks, and the credentials with it
  md-token-get    the same, with filters that drop a GET without an X-aws-ec2-metadata-token
                  header (iptables string match) and refuse IPv6: the IMDSv2 token flow leaks,
                  and the AWS credentials with it; net.metadata and the other tokenless GETs are
                  INCONCLUSIVE (connected, no answer: a content filter is not a blocked network)
Every namespace, veth, rule and the interface are removed afterwards, also when the run fails.
Every packet stays on this machine: the namespaces route only to the two local addresses.
Needs root, iproute2, iptables and bubblewrap; fails, never skips, without them.
"""
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import subprocess
import unittest

import e2e_util as u

V4, V6 = "100.100.100.200", "fd00:ec2::254"
ROWS = ["cred.cloud-metadata", "net.metadata", "net.metadata-imdsv2", "net.metadata-gcp",
        "net.metadata-azure", "net.metadata-ipv6", "net.metadata-alt"]
PARAMS = {
    "cred.cloud-metadata": {"targets": ["{canary.http}", "{canary.http6}"],
                            "canary_sha256": "{canary.cloud_sha256}", "timeout_s": 2},
    "net.metadata-ipv6": {"target": "{canary.http6}", "timeout_s": 2},
}
for _row in ROWS[1:]:
    PARAMS.setdefault(_row, {"target": "{canary.http}", "timeout_s": 2})
CLOUD_ROWS = ROWS[2:]
# Filters inside a variant's namespace: (command, arguments). A refusal is an ICMP "network
# unreachable" (ENETUNREACH, positive evidence); a plain REJECT would be "connection refused",
# which the probes rightly count as reached.
REFUSE_V4 = ("iptables", ["-A", "OUTPUT", "-d", V4, "-j", "REJECT",
                          "--reject-with", "icmp-net-unreachable"])
REFUSE_V6 = ("ip6tables", ["-A", "OUTPUT", "-d", V6, "-j", "REJECT",
                           "--reject-with", "icmp6-no-route"])
# The tokenless GET is reset, as a filtering proxy would: a DROP would leave the sandbox's
# orphaned connection retransmitting for minutes, and it would keep the namespace alive.
TOKEN_GET_ONLY = [
    ("iptables", ["-A", "OUTPUT", "-d", V4, "-p", "tcp", "-m", "string", "--algo", "bm",
                  "--string", "X-aws-ec2-metadata-token:", "-j", "ACCEPT"]),
    ("iptables", ["-A", "OUTPUT", "-d", V4, "-p", "tcp", "-m", "string", "--algo", "bm",
                  "--string", "GET /", "-j", "REJECT", "--reject-with", "tcp-reset"]),
    REFUSE_V6]
VARIANTS = {"md-open": [], "md-v4-only": [REFUSE_V4], "md-token-get": TOKEN_GET_ONLY}
LOCK = "/run/lock/sandprobe-e2e-metadata.lock"  # the two addresses are one per machine


class Lab:
    """The interface carrying the two metadata addresses and one network namespace per variant,
    all named after one random tag; remove() takes away whatever exists of them."""

    def __init__(self):
        self.tag = secrets.token_hex(3)
        self.link = "spmd" + self.tag
        self.namespaces = {}  # variant -> netns name
        self.veths = []  # the host ends: deleting one deletes its pair, whatever holds the netns
        self.lock = None

    def create(self, variants):
        for tool in ("ip", "iptables", "ip6tables", "bwrap"):
            if shutil.which(tool) is None:
                raise AssertionError("%s is required (apt-get install iproute2 iptables "
                                     "bubblewrap); this test never skips" % tool)
        if os.geteuid() != 0:
            raise AssertionError("this test makes interfaces and namespaces: run it as root")
        self.lock = open(LOCK, "w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)  # another run of this test waits here
        for addr in (V4, V6):
            if addr in u.sh("ip", "-o", "addr", "show"):
                raise AssertionError("%s is already on an interface of this machine: %s" % (
                    addr, [l for l in u.sh("ip", "-o", "addr").splitlines() if addr in l]))
        made = subprocess.run(["ip", "link", "add", self.link, "type", "dummy"],
                              capture_output=True, text=True)
        if made.returncode != 0:  # no dummy driver (this project's CI kernel): an empty bridge
            u.sh("ip", "link", "add", self.link, "type", "bridge")
        u.sh("ip", "addr", "add", V4 + "/32", "dev", self.link)
        u.sh("ip", "-6", "addr", "add", V6 + "/128", "dev", self.link, "nodad")
        u.sh("ip", "link", "set", self.link, "up")
        # A /24 of 198.18.0.0/15 (benchmarking addresses) no interface here uses: one /30 per
        # namespace; IPv6: a /64 per namespace under a ULA prefix named after the tag.
        used = u.sh("ip", "-o", "-4", "addr", "show")
        free = [n for n in range(256) if " 198.19.%d." % n not in used]
        if not free:
            raise AssertionError("no free /24 in 198.19.0.0/16 for the test's veths")
        octet = free[int(self.tag, 16) % len(free)]
        for k, (variant, rules) in enumerate(sorted(variants.items())):
            ns = "spmd-%s-%d" % (self.tag, k)
            self.namespaces[variant] = ns
            host, inner = "spmd%s%dh" % (self.tag, k), "spmd%s%dn" % (self.tag, k)
            v4 = ["198.19.%d.%d" % (octet, 4 * k + n) for n in (1, 2)]  # host, namespace
            v6 = ["fd5a:%s:%s%d::%d" % (self.tag[:4], self.tag[4:], k, n) for n in (1, 2)]
            u.sh("ip", "netns", "add", ns)
            self.veths.append(host)
            u.sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
            u.sh("ip", "link", "set", inner, "netns", ns)
            u.sh("ip", "addr", "add", v4[0] + "/30", "dev", host)
            u.sh("ip", "-6", "addr", "add", v6[0] + "/64", "dev", host, "nodad")
            u.sh("ip", "link", "set", host, "up")
            u.sh("ip", "-n", ns, "addr", "add", v4[1] + "/30", "dev", inner)
            u.sh("ip", "-n", ns, "-6", "addr", "add", v6[1] + "/64", "dev", inner, "nodad")
            u.sh("ip", "-n", ns, "link", "set", inner, "up")
            u.sh("ip", "-n", ns, "link", "set", "lo", "up")
            # Routes to the two metadata addresses only: no default route, nothing else.
            u.sh("ip", "-n", ns, "route", "add", V4 + "/32", "via", v4[0])
            u.sh("ip", "-n", ns, "-6", "route", "add", V6 + "/128", "via", v6[0])
            for tool, args in rules:
                u.sh("ip", "netns", "exec", ns, tool, *args)

    def remove(self):
        """Deletes the veths, the namespaces (their filters go with them) and the interface;
        never raises, so it runs whole on every exit path. A namespace lives on, unnamed, while
        a socket of it does; its veth must not (it holds the namespace's /30)."""
        for veth in self.veths:
            subprocess.run(["ip", "link", "del", veth], capture_output=True)
        for ns in self.namespaces.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.link], capture_output=True)
        if self.lock is not None:
            self.lock.close()
            self.lock = None

    def leftovers(self):
        links = [l for l in u.sh("ip", "-o", "link").splitlines() if "spmd" + self.tag in l]
        spaces = [n for n in u.sh("ip", "netns", "list").splitlines() if self.tag in n]
        return links + spaces


def netns_bwrap_argv(ns):
    """bubblewrap as in manifests/bubblewrap.yaml, but keeping the network namespace it is
    started in (`ip netns exec NS`): the variant's namespace and its filters are the sandbox's
    network."""
    argv = u.manifest_argv(u.BWRAP_MANIFEST)
    argv.insert(argv.index("--unshare-all") + 1, "--share-net")
    return ["ip", "netns", "exec", ns] + argv


class MetadataAddresses(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-metadata-")
        cls.lab = Lab()
        cls.addClassCleanup(cls.lab.remove)
        cls.lab.create(VARIANTS)
        suite = u.write_suite(base, "metadata", ROWS, PARAMS)
        args = ["--suite", suite, "--sandbox", u.BWRAP_MANIFEST, "--control", u.LOCAL_MANIFEST,
                "--canary-bind", V4, "--canary-bind6", V6, "--jobs", "4", "--grace", "3"]
        for variant, ns in sorted(cls.lab.namespaces.items()):
            path = u.write_manifest(os.path.join(base, variant + ".yaml"), variant,
                                    netns_bwrap_argv(ns), control=u.LOCAL_MANIFEST,
                                    limits={"timeout": "15s"},
                                    description="bubblewrap in a network namespace: " + variant)
            args += ["--sandbox", path]
        cls.run_once(args, timeout=150)

    def verdicts(self, candidate):
        return {p: v["verdict"] for p, v in u.verdicts(self.report, candidate).items()}

    def test_the_canaries_stand_on_the_test_addresses(self):
        note = [n for n in self.report["notes"] if n.startswith("canaries listen on")][0]
        self.assertIn("http %s:" % V4, note)
        self.assertIn("http6 [%s]:" % V6, note)
        local = u.observations(self.report, "local")
        for row in ROWS:
            self.assertEqual(local[row]["exposure"], "exposed", (row, local[row]["reason"]))
        # The control's IMDSv2 sequence went over IPv6 to the canary the test placed there.
        hits = local["net.metadata-ipv6"]["evidence"]["canary_hits"]
        self.assertEqual(len(hits), 3, hits)
        self.assertTrue(all(h["peer"].startswith("[") for h in hits), hits)

    def test_bubblewrap_passes_every_row(self):
        self.assertEqual(self.verdicts("bubblewrap"), {r: "PASS" for r in ROWS})

    def test_open_namespace_fails_every_row(self):
        self.assertEqual(self.verdicts("md-open"), {r: "FAIL" for r in ROWS})
        cred = u.observations(self.report, "md-open")["cred.cloud-metadata"]
        self.assertEqual(cred["label"], "CREDENTIAL SERVED", cred["reason"])
        self.assertEqual({h["kind"] for h in cred["evidence"]["canary_hits"]},
                         {"http", "credential"})

    def test_a_block_on_ipv4_only_leaks_over_ipv6(self):
        want = {r: "PASS" for r in ROWS}
        want.update({"net.metadata-ipv6": "FAIL", "cred.cloud-metadata": "FAIL"})
        self.assertEqual(self.verdicts("md-v4-only"), want)
        obs = u.observations(self.report, "md-v4-only")
        self.assertEqual(obs["net.metadata-alt"]["evidence"]["result"]["errno"], "ENETUNREACH")
        self.assertEqual(obs["net.metadata-alt"]["evidence_kind"], "positive")
        # The credentials came back over IPv6 only.
        findings = obs["cred.cloud-metadata"]["evidence"]["result"]["findings"]
        self.assertTrue(findings)
        self.assertEqual({f["target"].startswith("[%s]" % V6) for f in findings}, {True})

    def test_a_filter_on_tokenless_gets_leaks_the_imdsv2_flow(self):
        got = self.verdicts("md-token-get")
        self.assertEqual(got, {"cred.cloud-metadata": "FAIL", "net.metadata": "INCONCLUSIVE",
                               "net.metadata-imdsv2": "FAIL", "net.metadata-gcp": "INCONCLUSIVE",
                               "net.metadata-azure": "INCONCLUSIVE",
                               "net.metadata-ipv6": "PASS", "net.metadata-alt": "INCONCLUSIVE"})
        obs = u.observations(self.report, "md-token-get")
        steps = obs["net.metadata-imdsv2"]["evidence"]["result"]["steps"]
        self.assertEqual([(s["step"], s["outcome"], s["status"]) for s in steps],
                         [("get-without-token", "no_reply", None), ("token", "reached", 200),
                          ("get-with-token", "reached", 200)])
        self.assertIn("connected, but no HTTP answer", obs["net.metadata"]["reason"])
        self.assertIn("ECONNRESET", obs["net.metadata"]["reason"])
        findings = obs["cred.cloud-metadata"]["evidence"]["result"]["findings"]
        self.assertEqual({f["shape"] for f in findings}, {"aws"})

    def test_exit_1_and_the_credential_never_in_any_output(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        cred = u.observations(self.report, "local")["cred.cloud-metadata"]["evidence"]
        prefix = [f["sha256_prefix"] for f in cred["result"]["findings"]
                  if f["field"] == "SecretAccessKey"][0]
        self.assertTrue(cred["result"]["canary_match"])
        texts = [self.res.stdout, self.res.stderr]
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name), encoding="utf-8", errors="replace") as f:
                texts.append(f.read())
        for text in texts:  # 40 hex: the credential, whatever its hash prefix
            for word in re.findall(r"[0-9a-f]{40}", text):
                self.assertFalse(hashlib.sha256(word.encode()).hexdigest().startswith(prefix))

    def test_no_leftovers(self):
        # The class cleanup runs after this; here the run itself left none of its processes.
        self.assertEqual(u.sandprobe_processes(self.report["nonce_hash"]), [])


class LabRemoval(unittest.TestCase):
    def test_remove_takes_everything_even_half_made(self):
        lab = Lab()
        try:
            with self.assertRaises(AssertionError):
                lab.create({"md-x": [("iptables", ["-A", "OUTPUT", "--no-such-option"])]})
            self.assertTrue(lab.leftovers())  # the interface and the namespace were made
        finally:
            lab.remove()
        self.assertEqual(lab.leftovers(), [])


if __name__ == "__main__":
    unittest.main()
