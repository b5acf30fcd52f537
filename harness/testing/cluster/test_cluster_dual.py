"""Real cluster, dual-stack (ci/cluster/up --ip-family dual), NetworkPolicy enforced by
kube-router: every traffic row of the egress suite on both families, in one run. Runs on a
dual-stack enforce cluster of its own (ctest cluster.dual), and leaves it as it found it.

Each family is an arm: the shipped deny-egress manifest as it is (IPv4, the cluster's default
family) and with `kubernetes.ipFamily: IPv6`, whose rows aim at the in-cluster canary through its
IPv6-only Service and whose net.node-local tries the node's IPv6 address. One control (k8s-open)
sends what each candidate sends, so each family's row has a control of the same family. The
canary logs each hit's peer: a hit from a pod's IPv6 address is the harness's own proof that the
row went over IPv6.

  BothFamilies    the shipped deny-egress, each family with a settled re-run: what kube-router
                  v2.1.0 does on each family, printed as the README's dual-stack matrix.
  IPv4OnlyPolicy  the weakened copy: a policy written for IPv4 only (egress allowed to ::/0):
                  every IPv6 row FAILs once programmed, every IPv4 row holds, and the banner
                  names the IPv6 arm.

net.k8s-api and net.metadata are not here: the kubernetes Service is IPv4 only (its ClusterIP
is the API server's primary family), 169.254.169.254 is IPv4 by definition, and the API server
on the node's IPv6 address is net.node-local's.
"""
import json
import os
import re
import sys
import unittest

import cluster_util as c
import real_manifests as rm
import test_cluster_enforce as enforce

from test_cluster_enforce import tearDownModule  # noqa: E402,F401


def setUpModule():
    """A dual-stack cluster of its own configuration (cluster.dual): kube-router v2.1.0 with IPv6
    on once let a settled pod's ipBlock allow go unprogrammed (NodeAllowed held what it should
    have let through, docs/cluster.md), so the IPv4 modules keep their single-stack cluster."""
    enforce.setUpModule("--ip-family", "dual")

V4, V6 = "k8s-deny-egress", "k8s-deny-egress-ipv6"
ROWS = ["net.dns", "net.http-by-name", "net.tcp-by-ip", "net.udp", rm.HELD_OPEN, rm.NODE_LOCAL,
        ] + rm.CLOUD_ROWS
# Rows the in-cluster canary decides (its hits carry the peer's address).
CANARY_ROWS = [r for r in ROWS if r != rm.NODE_LOCAL]
# The canary's peers ("10.252.0.7:41000", "[fd00:252::7]:41000"): ci/cluster/lib.sh
# CLUSTER_POD_CIDR and CLUSTER_POD_CIDR6.
POD4, POD6 = "10.252.", "[fd00:252:"
SERVICE6 = "[fd00:253::"             # SERVICE_CIDR6, bracketed in host:port
# A policy written for IPv4 only: the sandbox's egress to anything IPv6 is allowed.
V4_ONLY_POLICY = """apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-egress-ipv4-only
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress:
    - to:
        - ipBlock: {cidr: "::/0"}
"""


SUITE = os.path.join(c.u.HOME, "suites", "kubernetes-dual-stack.yaml")  # ROWS, as shipped
DENY6 = os.path.join(rm.KUBE, "deny-egress-ipv6.yaml")


def renamed(path, old, new):
    """The manifest at `path` with its name `old` -> `new`."""
    with open(path) as f:
        text = f.read()
    if text.count("name: %s\n" % old) != 1:
        raise AssertionError("%s: expected one 'name: %s'" % (path, old))
    with open(path, "w") as f:
        f.write(text.replace("name: %s\n" % old, "name: %s\n" % new))
    return path


def run_args(d, v4=V4, v6=V6, policy=None, add=tuple(enforce.SETTLED)):
    """Run args: suites/kubernetes-dual-stack.yaml against the shipped deny-egress manifests of
    each family, named `v4` (None: no IPv4 arm) and `v6`, with `add` lines in their kubernetes:
    sections; `policy` (YAML) replaces deny-all-egress. One control for both. Needs a dual-stack
    cluster."""
    if os.path.exists("/run/sandprobe-cluster/ip-family"):
        with open("/run/sandprobe-cluster/ip-family") as f:
            family = f.read().strip()
        if family != "dual":
            raise AssertionError("an IPv6 arm needs ci/cluster/up --ip-family dual; the cluster "
                                 "is %s" % family)
    ctl = rm.copy_shipped(rm.OPEN, os.path.join(d, "open.yaml"))
    add = list(add)
    if policy:
        path = os.path.join(d, "policy.yaml")
        with open(path, "w") as f:
            f.write(policy)
        add.append("networkPolicy: %s" % json.dumps(path))
    drop = ("minPolicyAge",) + (("networkPolicy",) if policy else ())
    sandboxes = []
    for name, shipped, path in ((v4, V4, "deny4.yaml"), (v6, V6, "deny6.yaml")):
        if name:
            m = rm.copy_shipped(rm.DENY if shipped == V4 else DENY6, os.path.join(d, path),
                                control=ctl, drop=drop, add=add)
            sandboxes += ["--sandbox", renamed(m, shipped, name) if name != shipped else m]
    with open(SUITE) as f:  # the shipped suite's rows are this module's
        ids = re.findall(r"^  - id: (\S+)$", f.read(), re.M)
    if ids != ROWS:
        raise AssertionError("%s lists %s, this module expects %s" % (SUITE, ids, ROWS))
    return ["--suite", SUITE] + sandboxes + rm.FAST


class DualRun(enforce.RealRun):
    POLICY = None  # None = the shipped deny-all-egress; else a NetworkPolicy's YAML
    ADD = tuple(enforce.SETTLED)  # kubernetes: lines of both arms
    SUFFIXES = ("", "-settled")  # each family's columns: the arm and its settled twin

    @classmethod
    def run_args(cls):
        return run_args(cls.tmp.name, cls.V4, cls.V6, policy=cls.POLICY, add=cls.ADD)

    def settled(self, arm):
        """The column of `arm`'s family whose pods waited before the probe started."""
        return arm + self.SUFFIXES[-1]

    def cells(self, arm, probe):
        return [o for o in self.report["observations"] if o["arm"] == arm and o["probe"] == probe]

    def control_for(self, arm, probe):
        """The control's cell that sent what `arm` sent for `probe` (identical parameters)."""
        want = self.cell(arm, probe)["params"]
        found = [o for o in self.cells("k8s-open", probe) if o["params"] == want]
        self.assertEqual(len(found), 1, (arm, probe, want))
        return found[0]

    def table(self):
        """probe -> label per column, printed: the README's dual-stack matrix comes from it."""
        cols = []
        for family, arm in (("IPv4", self.V4), ("IPv6", self.V6)):
            cols.append(("k8s-open (%s)" % family, lambda p, a=arm: self.control_for(a, p)))
            cols += [(arm + s, lambda p, a=arm + s: self.cell(a, p)) for s in self.SUFFIXES]
        rows = {p: [get(p)["label"] for _, get in cols] for p in ROWS}
        print("\n[%s] %s\n%s\nbanners: %s" % (
            type(self).__name__, [n for n, _ in cols], "\n".join(
                "  %-22s %s" % (p, " | ".join(labels)) for p, labels in rows.items()),
            self.report["banners"]), file=sys.stderr)
        return rows

    def assert_each_family_went_its_own_way(self):
        # The harness's proof, not the probe's word: the canary saw the control's IPv6 rows come
        # from a pod's IPv6 address, and the IPv4 rows from an IPv4 one; the IPv6 arm's targets
        # are the IPv6 Service's; net.node-local tried the node's IPv6 address.
        for probe in CANARY_ROWS:
            for arm, prefix in ((self.V4, POD4), (self.V6, POD6)):
                ctl = self.control_for(arm, probe)
                peers = {h["peer"] for h in ctl["evidence"]["canary_hits"]}
                self.assertTrue(peers, (arm, probe, ctl["reason"]))
                self.assertTrue(all(p.startswith(prefix) for p in peers), (arm, probe, peers))
                for cand in (arm + s for s in self.SUFFIXES):
                    for h in self.cell(cand, probe)["evidence"]["canary_hits"]:
                        self.assertTrue(h["peer"].startswith(prefix), (cand, probe, h))
            if probe not in ("net.http-by-name",):
                self.assertIn(SERVICE6, json.dumps(self.cell(self.V6, probe)["params"]), probe)
        self.assertIn("-v6.sandprobe.svc.cluster.local",
                      self.cell(self.V6, "net.http-by-name")["params"]["url"])
        for arm, family in ((self.V4, ""), (self.V6, "IPv6")):
            for cell in (self.cell(self.settled(arm), rm.NODE_LOCAL),
                         self.control_for(arm, rm.NODE_LOCAL)):  # the control in that family too
                result = cell["evidence"]["result"]
                self.assertEqual(result["family"], family, (cell["arm"], result))
                self.assertEqual(result["addresses"],
                                 ["fd00:251::2" if family else "10.251.0.2"], cell["arm"])


class BothFamilies(enforce.LateOrHeld, DualRun):
    V4, V6 = V4, V6
    KUBECONFIG = c.SA_KUBECONFIG  # least privilege: the Role covers the second Service too

    def test_each_family_went_its_own_way(self):
        self.assert_each_family_went_its_own_way()

    def test_both_families_held_once_programmed_a_fresh_leak_is_late(self):
        # Measured on kube-router v2.1.0 (--enable-ipv6): IPv6 egress is held once programmed,
        # as IPv4 is; it drops where IPv4 is REJECTed ("blocked", not "refused (filtered)"), and
        # a fresh pod leaks on both families alike.
        self.table()
        for arm in (self.V4, self.V6):
            for probe in ROWS:
                ctl = self.control_for(arm, probe)
                self.assertEqual(ctl["exposure"], "exposed", (arm, probe, ctl["reason"]))
        self.assert_held_once_programmed_and_a_leak_is_late(ROWS, self.V4, self.V4 + "-settled")
        self.assert_held_once_programmed_and_a_leak_is_late(ROWS, self.V6, self.V6 + "-settled")
        if any(self.cell(self.V6, p)["exposure"] == "exposed" for p in ROWS):
            self.assertIn(self.V6 + " (IPv6)", self.report["banners"][0])  # the family named

    def test_nothing_left(self):
        self.assert_nothing_left()


class IPv4OnlyPolicy(DualRun):
    """The weakened copy: egress to ::/0 allowed, as a policy written with IPv4 in mind might."""
    V4, V6 = "k8s-v4-only", "k8s-v4-only-ipv6"
    POLICY = V4_ONLY_POLICY
    # Settled pods only (podSettle on the arms themselves): the fresh-pod gap is BothFamilies'.
    ADD = ("minPolicyAge: 10s", "podSettle: 6s")
    SUFFIXES = ("",)

    def test_the_ipv6_rows_fail_once_programmed_and_the_ipv4_rows_hold(self):
        self.table()
        self.assert_each_family_went_its_own_way()
        for probe in ROWS:
            v4 = self.verdict(self.V4, probe)
            self.assertEqual((v4["verdict"], v4["validated_by"]), ("PASS", "k8s-open"),
                             (probe, v4["reason"]))
            cell, v6 = self.cell(self.V6, probe), self.verdict(self.V6, probe)
            if probe == "net.http-by-name":
                # The name cannot be looked up: cluster DNS is an IPv4 Service, and IPv4 is held.
                self.assertEqual((cell["exposure"], v6["verdict"]), ("contained", "PASS"),
                                 cell["reason"])
                self.assertEqual(cell["evidence"]["canary_hits"], [])
            else:
                self.assertEqual((cell["exposure"], v6["verdict"]), ("exposed", "FAIL"),
                                 (probe, cell["reason"]))
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        self.assertNotIn(rm.BANNER, self.res.stdout)  # an allow-list: its rows say it

    def test_nothing_left(self):
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
