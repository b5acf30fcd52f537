"""Real cluster, NetworkPolicy enforced by kube-router (ci/cluster/up --network-policy enforce).
One cluster for the module, or the one run_modules.py started for this module and
test_cluster_workloads.py (cluster_util.Fixture): ci/cluster/down must leave nothing behind, and
each module leaves the cluster as it found it; each class is one `sandprobe run` against it.

  Enforced        the egress suite against the shipped deny-egress manifest with a settled
                  re-run: held once kube-router has programmed the pod (kube-router's REJECT
                  read as a filter, not reach); a fresh pod's leak is "enforced late", never
                  "not enforced".
  Port53Allowed   a policy allowing port 53 to anywhere: the rows it opens REACHED and named.
  HostNetwork     a hostNetwork jobTemplate on the deny arm (in a namespace whose Pod Security
                  admits host networking): every row says host_network, judged on what it
                  measured.
  NewPodOldPolicy a fresh pod under an old policy, and one that waited: what kube-router does,
                  measured and printed, judged as the product judges it.
  LeastPrivilege  the whole egress run with the sandprobe ServiceAccount's token only.
  Interrupt       Ctrl-C while the loops run: nothing of the run left on the cluster.
The kubelet's own facts (OOMKilled, DeadlineExceeded, eviction) and Pod Security's refusals are
in test_cluster_workloads.py.
Traffic rule: every target is inside the cluster's namespace; EgressWatch sees no packet.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import cluster_util as c
from cluster_util import u
import real_manifests as rm

CLUSTER = None
WATCH = None
TMP = None
FIXTURE = None


def setUpModule(*extra_up_args):
    """The module's cluster, NetworkPolicy enforced, with `extra_up_args` for ci/cluster/up (the
    gVisor module adds `--runtime-class gvisor`, test_cluster_dual `--ip-family dual`):
    run_modules.py's shared one, or its own."""
    global CLUSTER, WATCH, TMP, FIXTURE
    u.require_sandprobe()
    FIXTURE = c.Fixture.for_module("--network-policy", "enforce", *extra_up_args)
    CLUSTER, WATCH, TMP = FIXTURE.cluster, FIXTURE.watch, FIXTURE.tmp


def tearDownModule():
    if FIXTURE:
        FIXTURE.done()


class RealRun(u.ReportReading, unittest.TestCase):
    """One sandprobe run (cls.run_args()) against the running module's cluster
    (cluster_util.Fixture.current), made in setUpClass."""
    KUBECONFIG = None

    @classmethod
    def setUpClass(cls):
        cluster = c.Fixture.current.cluster
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-cluster-run-",
                                              dir=c.Fixture.current.tmp.name)
        d = cls.tmp.name
        cls.out = os.path.join(d, "out")
        t0 = time.monotonic()
        cls.res = u.run_sandprobe(["run", "--out", cls.out, "--canary-dir",
                                   os.path.join(d, "canary"), "--no-color"] + cls.run_args(),
                                  timeout=900, env=cluster.env(cls.KUBECONFIG))
        cls.wall = time.monotonic() - t0
        cls.report = u.report_or_none(cls.out)
        cls.left = ([] if not cls.report else
                    cluster.wait_objects_gone(cls.report["run_id"]) +
                    cluster.wait_objects_gone(cls.report["run_id"], namespace=HOSTNET_NS))
        print("\n[%s] run %.0f s, exit %d\n%s" % (cls.__name__, cls.wall, cls.res.returncode,
                                                 cls.res.stdout), file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assert_nothing_left(self):
        self.assertIsNotNone(self.report, "no report.json: %s" % self.res.describe())
        self.assertEqual(self.left, [])

    @classmethod
    def policy_run(cls, arm, rows, policy=True, params=None, extra=(), job_spec=None, flags=(),
                   control_spec=None):
        d = cls.tmp.name
        ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open", job_spec=control_spec)
        cand = rm.write_manifest(os.path.join(d, "cand.yaml"), arm, control=ctl, policy=policy,
                                 extra=extra, job_spec=job_spec)
        suite = u.write_suite(d, "suite-" + arm, rows, params=params or rm.cluster_params())
        return ["--suite", suite, "--sandbox", cand] + list(flags) + rm.FAST


HOSTNET_NS = "sandprobe-hostnet"


# kube-router (v2.1.0, as k3s embeds it) programs a new pod's rules after the pod has started:
# measured here, a fresh pod under a deny-egress policy 10 s old reached the canaries by IP and by
# name, while pods that waited 6 s were held (docs/cluster.md "Where the fake was wrong"). So the
# policy runs carry a settled re-run (`settledRerun`), and the question each test asks is the
# product's: held once programmed, and a fresh pod's leak reported as late enforcement, never as
# "not enforced".
SETTLED = ["minPolicyAge: 10s", "settledRerun: 6s"]
DENY_ARM, SETTLED_ARM = "k8s-deny-egress", "k8s-deny-egress-settled"
EGRESS_ROWS = rm.TRAFFIC_ROWS + [rm.HELD_OPEN, rm.METADATA] + rm.CLOUD_ROWS + [rm.CLOUD_CRED]
HELD_KINDS = {"tcp-held", "udp-held"}


def held_hits(cell):
    """The kinds of the canary's hits that carried a nonce over a held-open flow."""
    return sorted({h["kind"] for h in cell["evidence"]["canary_hits"]} & HELD_KINDS)


class LateOrHeld:
    """Assertions shared by the runs of the shipped deny-egress manifest."""

    def assert_held_once_programmed_and_a_leak_is_late(self, rows, fresh, settled):
        leaked = []
        for probe in rows:
            self.assertEqual(self.cell("k8s-open", probe)["exposure"], "exposed", probe)
            held = self.cell(settled, probe)
            self.assertEqual(held["exposure"], "contained", (probe, held["reason"]))
            self.assertEqual(held["evidence"]["canary_hits"], [], probe)
            v = self.verdict(settled, probe)
            self.assertEqual((v["verdict"], v["validated_by"]), ("PASS", "k8s-open"),
                             (probe, v["reason"]))
            cell = self.cell(fresh, probe)
            if cell["exposure"] == "exposed":  # a fresh pod's leak: the canary (or the API
                # server, for net.k8s-api) answered it
                result = cell["evidence"]["result"] or {}
                self.assertTrue(cell["evidence"]["canary_hits"] or result.get("outcome") ==
                                "reached", (probe, cell["reason"]))
                self.assertEqual(self.verdict(fresh, probe)["verdict"], "FAIL", probe)
                leaked.append(probe)
            else:
                self.assertEqual(self.verdict(fresh, probe)["verdict"], "PASS", probe)
        print("\n[%s] fresh pods leaked: %s" % (type(self).__name__, leaked), file=sys.stderr)
        self.assertNotIn(rm.BANNER, self.res.stdout)
        if leaked:
            self.assertEqual(self.res.returncode, 1, self.res.describe())
            self.assertEqual(len(self.report["banners"]), 1, self.report["banners"])
            self.assertTrue(self.report["banners"][0].startswith(rm.LATE), self.report["banners"])
        else:
            self.assertEqual(self.res.returncode, 0, self.res.describe())
            self.assertEqual(self.report["banners"], [])


class Enforced(LateOrHeld, RealRun):
    @classmethod
    def run_args(cls):
        return rm.shipped_egress_run(cls.tmp.name, deny_add=SETTLED)

    def test_held_once_programmed_a_fresh_leak_is_late(self):
        self.assert_held_once_programmed_and_a_leak_is_late(EGRESS_ROWS, DENY_ARM, SETTLED_ARM)

    def test_held_open_flows(self):
        # The settled pod starts under a programmed policy: no flow opens at all. The fresh pod
        # opens its flows in the gap; what kube-router then does to them is measured, and the
        # probe's view (the echo) and the canary's log must agree.
        settled = self.cell(SETTLED_ARM, rm.HELD_OPEN)
        self.assertEqual(settled["evidence"]["result"]["outcome"], "never_opened",
                         settled["reason"])
        self.assertEqual(held_hits(self.cell("k8s-open", rm.HELD_OPEN)), sorted(HELD_KINDS))
        fresh = self.cell(DENY_ARM, rm.HELD_OPEN)
        r = fresh["evidence"]["result"] or {}
        print("\n[held-open, fresh pod] %s after %s s held by %s; late %s; canary %s; %s" % (
            r.get("outcome"), r.get("held_after_s"), r.get("held_by"), r.get("late"),
            held_hits(fresh), fresh["label"]), file=sys.stderr)
        echoed = sorted("%s-held" % k for k, v in (r.get("late") or {}).items() if v["echoed"])
        self.assertLessEqual(set(echoed), set(held_hits(fresh)), "an echo the canary never logged")
        if r.get("outcome") in ("kept", "open"):
            self.assertEqual(self.verdict(DENY_ARM, rm.HELD_OPEN)["verdict"], "FAIL")
        if held_hits(fresh):
            self.assertEqual(fresh["exposure"], "exposed", fresh["reason"])

    def test_refusals_are_kube_routers_reject(self):
        # kube-router REJECTs: a held row is a refusal at the canary the control reached.
        labels = {p: self.cell(SETTLED_ARM, p)["label"] for p in ("net.tcp-by-ip", "net.udp")}
        self.assertEqual(set(labels.values()), {"refused (filtered)"}, labels)
        self.assertIn("which control k8s-open reached in this run",
                      self.cell(SETTLED_ARM, "net.tcp-by-ip")["reason"])

    def test_interfaces_reported_not_judged_and_runtime_class_refused(self):
        # A policy drops packets; the pod keeps eth0: reported, not judged.
        self.assertEqual(self.cell(DENY_ARM, "net.interfaces")["exposure"], "exposed")
        self.assertEqual(self.verdict(DENY_ARM, "net.interfaces")["verdict"], "SKIP")
        self.assertEqual(self.verdict(DENY_ARM, "platform.runtime-class")["verdict"], "PASS")

    def test_ruled_out_note(self):
        note = self.note(DENY_ARM + ": ruled out before concluding")
        self.assertIn("server v1.34.4", note)
        self.assertIn("deny all egress", note)
        self.assertIn("are selected by its podSelector", note)

    def test_nothing_left(self):
        self.assert_nothing_left()


# A policy allowing DNS (UDP and TCP 53) to anywhere, beside the deny arm's own.
PORT53_POLICY = """apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: dns-anywhere
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress:
    - ports:
        - {port: 53, protocol: UDP}
        - {port: 53, protocol: TCP}
"""


class Port53Allowed(RealRun):
    @classmethod
    def run_args(cls):
        policy = os.path.join(cls.tmp.name, "dns-anywhere.yaml")
        with open(policy, "w") as f:
            f.write(PORT53_POLICY)
        return cls.policy_run(
            "k8s-dns-only", ["net.dns", "net.tcp-by-ip", "net.udp", "net.http-by-name"],
            policy=policy, extra=SETTLED, params=rm.cluster_params(**{
                "net.tcp-by-ip": {"target": "{canary.cluster.ip}:53"},
                "net.udp": {"target": "{canary.cluster.ip}:53"}}))

    def test_port_53_reached_and_named_the_rest_held_once_programmed(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        for arm in ("k8s-dns-only", "k8s-dns-only-settled"):
            for probe in ("net.dns", "net.tcp-by-ip", "net.udp"):
                o = self.cell(arm, probe)
                self.assertEqual(o["label"], "REACHED", (arm, probe, o["reason"]))
                self.assertTrue(o["evidence"]["canary_hits"], (arm, probe))
                self.assertEqual(self.verdict(arm, probe)["verdict"], "FAIL")
        http = self.cell("k8s-dns-only-settled", "net.http-by-name")
        self.assertEqual(http["exposure"], "contained", http["reason"])
        note = self.note("k8s-dns-only: ruled out before concluding")
        self.assertIn("ports 53/UDP, 53/TCP to any", note)
        self.assertNotIn(rm.BANNER, self.res.stdout)
        self.assert_nothing_left()


# The host-network canary: cluster_util.ECHO_SERVER in the node's own network namespace on the
# node's address, as a host-network service listens there.
HOST_ECHO_PORT, NODE_PORT = 7100, 30700


class NodeLocal(RealRun):
    """The node's own addresses under deny-egress: the API server and the kubelet by the node's
    address (the driver's SANDPROBE_NODE_IP) and by the gateway (the node's address on the pod
    network), a NodePort of the in-cluster canary and a host-network canary. Both arms get the same
    targets; the report names which address and port each cell reached."""

    @classmethod
    def run_args(cls):
        node_ip = c.lib_value("NODE_IP")
        cls.host_echo = subprocess.Popen(
            ["nsenter", "--net=/run/netns/" + c.NETNS, sys.executable, "-u", "-c", c.ECHO_SERVER,
             node_ip, str(HOST_ECHO_PORT), "", "900"], stdout=subprocess.PIPE, text=True)
        cls.addClassCleanup(cls.host_echo.wait, 10)
        cls.addClassCleanup(cls.host_echo.kill)
        assert cls.host_echo.stdout.readline().strip() == "READY"
        cls.addClassCleanup(CLUSTER.kubectl, "-n", c.NS, "delete", "service", "canary-nodeport",
                            "--ignore-not-found", check=False)
        CLUSTER.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "canary-nodeport", "namespace": c.NS},
            "spec": {"type": "NodePort", "selector": {"sandprobe.io/role": "canary"},
                     "ports": [{"port": 7000, "targetPort": 7000, "nodePort": NODE_PORT,
                                "protocol": "TCP"}]}}))
        cls.node_ip = node_ip
        targets = ["api-server=6443/https", "kubelet=10250/https", "kubelet-read-only=10255/http",
                   "nodeport=%d/echo" % NODE_PORT, "host-network=%d/echo" % HOST_ECHO_PORT]
        # net.tcp-by-ip aims at the in-cluster canary, so the run deploys it (the driver does only
        # for a suite that names it), and shows pod-to-pod beside pod-to-node.
        return cls.policy_run(DENY_ARM, ["net.tcp-by-ip", rm.NODE_LOCAL], extra=SETTLED,
                              params=rm.cluster_params(**{rm.NODE_LOCAL: {
                                  "targets": targets, "include_gateway": True}}))

    def pairs(self, arm):
        r = self.cell(arm, rm.NODE_LOCAL)["evidence"]["result"] or {}
        return {"%s %s:%d" % (p["name"], p["address"], p["port"]): p["answered"] or p["errno"]
                for p in r.get("pairs", [])}

    def test_the_control_reaches_every_node_service(self):
        open_pairs = self.pairs("k8s-open")
        for name in ("api-server", "kubelet", "nodeport", "host-network"):
            key = "%s %s:" % (name, self.node_ip)
            self.assertTrue([v for k, v in open_pairs.items() if k.startswith(key) and v is True],
                            (name, open_pairs))
        self.assertEqual(self.cell("k8s-open", rm.NODE_LOCAL)["exposure"], "exposed")

    def test_each_cell_names_what_it_reached(self):
        measured = {}
        for arm in (DENY_ARM, SETTLED_ARM):
            cell, v = self.cell(arm, rm.NODE_LOCAL), self.verdict(arm, rm.NODE_LOCAL)
            pairs = self.pairs(arm)
            self.assertEqual(len(pairs), 10, pairs)  # 2 addresses x 5 targets, every one tried
            reached = sorted(k for k, a in pairs.items() if a is True)
            measured[arm] = (v["verdict"], reached, pairs)
            if arm == SETTLED_ARM:  # once programmed, kube-router holds pod-to-node too
                self.assertEqual(reached, [], pairs)
            if reached:
                self.assertEqual((cell["exposure"], v["verdict"]), ("exposed", "FAIL"))
                for k in reached:  # "... address name:port (how) ..." in the reason
                    name, address_port = k.split(" ", 1)
                    address, port = address_port.split(":")
                    self.assertRegex(cell["reason"], r"%s [^;]*\b%s:%s \(" % (
                        re.escape(address), re.escape(name), port))
            else:
                self.assertEqual((cell["exposure"], v["verdict"]), ("contained", "PASS"),
                                 cell["reason"])
                self.assertEqual(v["validated_by"], "k8s-open")
        lines = ["  %s: %s, reached %s; all %s" % ((a,) + m) for a, m in measured.items()]
        print("\n[node-local under deny-egress]\n" + "\n".join(lines), file=sys.stderr)

    def test_nothing_left(self):
        self.assert_nothing_left()


class NodeAllowed(RealRun):
    """The weakened policy: deny-egress plus egress to the node's address (an ipBlock /32, as a
    policy written "to let the agent reach the API server" does). net.node-local must FAIL in the
    settled column, naming the node address, while pod-to-pod stays held."""

    @classmethod
    def run_args(cls):
        cls.node_ip = c.lib_value("NODE_IP")
        policy = os.path.join(cls.tmp.name, "node-allowed.yaml")
        with open(policy, "w") as f:
            f.write(json.dumps({
                "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": "node-allowed"},
                "spec": {"podSelector": {}, "policyTypes": ["Egress"],
                         "egress": [{"to": [{"ipBlock": {"cidr": cls.node_ip + "/32"}}]}]}}))
        return cls.policy_run("k8s-node-allowed", ["net.tcp-by-ip", rm.NODE_LOCAL],
                              policy=policy, extra=SETTLED)

    def test_the_node_row_fails_and_names_the_node_address(self):
        cell = self.cell("k8s-node-allowed-settled", rm.NODE_LOCAL)
        self.assertEqual(self.verdict("k8s-node-allowed-settled", rm.NODE_LOCAL)["verdict"],
                         "FAIL", cell["reason"])
        self.assertIn("%s api-server:6443 (HTTP" % self.node_ip, cell["reason"])
        held = self.cell("k8s-node-allowed-settled", "net.tcp-by-ip")
        self.assertEqual(held["exposure"], "contained", held["reason"])
        self.assert_nothing_left()


class HostNetwork(RealRun):
    """Pod Security restricted (the sandprobe namespace) refuses host networking outright, so this
    arm runs in a namespace labelled privileged: there the policy selects the pod and cannot
    apply to it."""

    @classmethod
    def run_args(cls):
        # Removed after the class, so that the next module finds the cluster as this one did.
        cls.addClassCleanup(CLUSTER.kubectl, "delete", "namespace", HOSTNET_NS,
                            "--ignore-not-found", "--wait=false", check=False)
        CLUSTER.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": HOSTNET_NS, "labels": {
                "pod-security.kubernetes.io/enforce": "privileged"}}}))
        d = cls.tmp.name
        # The control beside it, in the same namespace (one in-cluster canary per run).
        ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open", namespace=HOSTNET_NS)
        cand = rm.write_manifest(os.path.join(d, "cand.yaml"), "k8s-deny-hostnet", control=ctl,
                                 policy=True, job_spec={"hostNetwork": True},
                                 namespace=HOSTNET_NS)
        suite = u.write_suite(d, "hostnet", ["net.dns", "net.tcp-by-ip", "net.udp",
                                             "net.http-by-name"], params=rm.cluster_params())
        return ["--suite", suite, "--sandbox", cand] + rm.FAST

    def test_host_network_is_named_and_every_row_judged_on_what_it_measured(self):
        # The API leaves NetworkPolicy on host-network pods to the plugin. kube-router matches
        # pods by IP, and a host-network pod's IP is the node's: measured here, such a pod reached
        # the canaries by IP once and was held once (fresh and settled timing). The product's part
        # is the same either way: every row says host_network, the note says why a policy may not
        # hold, and each verdict follows its cell.
        measured = {}
        for probe in ("net.dns", "net.tcp-by-ip", "net.udp", "net.http-by-name"):
            cell = self.cell("k8s-deny-hostnet", probe)
            self.assertIs(cell["evidence"]["driver_facts"].get("host_network"), True, probe)
            v = self.verdict("k8s-deny-hostnet", probe)["verdict"]
            self.assertEqual(v, {"exposed": "FAIL", "contained": "PASS"}.get(cell["exposure"],
                                                                            "INCONCLUSIVE"), probe)
            if cell["exposure"] == "exposed":
                self.assertTrue(cell["evidence"]["canary_hits"], (probe, cell["reason"]))
            measured[probe] = cell["label"]
        print("\n[hostNetwork under deny-egress] %s" % measured, file=sys.stderr)
        self.assertIn("the NetworkPolicy API leaves host-network pods to the plugin",
                      self.note("k8s-deny-hostnet: ruled out before concluding"))
        self.assertEqual(self.res.returncode,
                         1 if "FAIL" in json.dumps(u.verdicts(self.report, "k8s-deny-hostnet"))
                         else 0)
        self.assertNotIn(rm.BANNER, self.res.stdout)
        self.assert_nothing_left()


class NewPodOldPolicy(RealRun):
    """A policy aged 10 s, then a fresh pod (k8s-deny) and one that waited 6 s after starting
    before its probe ran (k8s-deny-settled), three trials each: whether kube-router programs a
    new pod's rules before the pod's first packet is measured, not assumed."""

    @classmethod
    def run_args(cls):
        return cls.policy_run("k8s-deny", ["net.tcp-by-ip", "net.udp"],
                              extra=["minPolicyAge: 10s", "settledRerun: 6s"],
                              flags=["--repeat", "3"])

    def test_what_kube_router_does_is_reported_consistently(self):
        fresh = {p: self.cell("k8s-deny", p) for p in ("net.tcp-by-ip", "net.udp")}
        settled = {p: self.cell("k8s-deny-settled", p) for p in ("net.tcp-by-ip", "net.udp")}
        leaked = [p for p, o in fresh.items() if o["exposure"] == "exposed"]
        print("\n[new pod, old policy] fresh: %s; settled: %s; banners: %s" % (
            {p: o["label"] for p, o in fresh.items()},
            {p: o["label"] for p, o in settled.items()}, self.report["banners"]),
            file=sys.stderr)
        for p in ("net.tcp-by-ip", "net.udp"):
            self.assertGreaterEqual(fresh[p]["evidence"]["driver_facts"]["policy_age_s"], 10)
            self.assertEqual(settled[p]["exposure"], "contained", settled[p]["reason"])
        if leaked:  # a leak in any trial is a leak, and the banner says it is late
            self.assertEqual(self.res.returncode, 1)
            self.assertTrue(self.report["banners"][0].startswith(rm.LATE), self.report["banners"])
        else:
            self.assertEqual(self.res.returncode, 0, self.res.describe())
            self.assertEqual(self.report["banners"], [])
        self.assert_nothing_left()


class LeastPrivilege(LateOrHeld, RealRun):
    KUBECONFIG = c.SA_KUBECONFIG

    @classmethod
    def run_args(cls):
        return rm.shipped_egress_run(cls.tmp.name, deny_add=SETTLED)

    def test_the_service_account_suffices(self):
        self.assert_held_once_programmed_and_a_leak_is_late(rm.TRAFFIC_ROWS, DENY_ARM,
                                                            SETTLED_ARM)
        self.assertNotIn("forbidden", self.res.stderr.lower())
        for v in self.report["verdicts"]:
            self.assertNotEqual(v["verdict"], "ERROR", v)
        self.assert_nothing_left()


def start_two_loops(test, prefix, flags=()):
    """Starts `sandprobe run` of res.cpu-loop (30 s claims, 40 s deadline) on k8s-open and
    k8s-deny in the module's cluster, in its own session (a terminal's Ctrl-C reaches its group),
    and waits (120 s at most) until both arms' loop pods run. -> (Popen, out dir, the deny
    manifest, run id); the temporary folder and a kill of a run still going are the test's
    cleanups."""
    tmp = tempfile.TemporaryDirectory(prefix=prefix, dir=TMP.name)
    test.addCleanup(tmp.cleanup)
    d = tmp.name
    ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open", timeout=30)
    deny = rm.write_manifest(os.path.join(d, "deny.yaml"), "k8s-deny", control=ctl,
                             policy=True, timeout=30)
    suite = u.write_suite(d, "loops", ["res.cpu-loop"], params=rm.cluster_params())
    out = os.path.join(d, "out")
    p = subprocess.Popen(
        [u.BIN, "run", "--suite", suite, "--sandbox", deny, "--out", out, "--canary-dir",
         os.path.join(d, "canary"), "--default-timeout", "40", "--grace", "2"] + list(flags),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env=dict(os.environ, SANDPROBE_HOME=u.HOME, **CLUSTER.env()), start_new_session=True)
    test.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
    end = time.monotonic() + 120
    loops = []
    while time.monotonic() < end and len(loops) < 2:
        if p.poll() is not None:
            test.fail("sandprobe ended early: %s" % p.communicate()[1][-3000:])
        pods = CLUSTER.get("-n", c.NS, "pods", "-l", c.RUN_LABEL)["items"]
        loops = [q for q in pods if q["status"].get("phase") == "Running"
                 and q["metadata"]["labels"].get("sandprobe.io/role") != "canary"
                 and "-preflight" not in q["metadata"]["labels"].get("job-name", "")]
        time.sleep(0.5)
    test.assertGreaterEqual(len(loops), 2, "two running res.cpu-loop pods")
    return p, out, deny, loops[0]["metadata"]["labels"][c.RUN_LABEL]


class Interrupt(unittest.TestCase):
    """Ctrl-C while both arms' res.cpu-loop pods run on the real node: the run stops within
    30 s, exit 2 (nothing was measured to FAIL), report.json says interrupted, and every object
    of the run (Jobs, their pods, the canary's Pod and Service, the policy) is gone."""

    def test_ctrl_c_exit_2_and_nothing_left(self):
        p, out, _, run_id = start_two_loops(self, "sandprobe-cluster-int-")
        t0 = time.monotonic()
        os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, err = p.communicate(timeout=90)
        err = err.decode("utf-8", "replace")
        self.assertLess(time.monotonic() - t0, 30, "Ctrl-C took too long")
        self.assertEqual(p.returncode, 2, err[-3000:])
        report = u.load_report(out)
        self.assertTrue(report["interrupted"])
        self.assertEqual(report["run_id"], run_id)
        self.assertEqual(CLUSTER.wait_objects_gone(run_id), [])


if __name__ == "__main__":
    unittest.main()
