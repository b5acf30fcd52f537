"""End-to-end: the kubernetes driver through the REAL sandprobe binary against the FAKE Kubernetes
API server in its docker-backed mode (harness/testing/fake_kube/fake_kube.py --kubelet docker):
pods are real containers from the probe image on a pod network the fake creates (an --internal
Docker network, every pod with eth0), Services are kube-proxy-style DNAT, cluster DNS answers the
names it knows, NetworkPolicy is enforced by packet filters (silent drops). No cluster is
contacted; the suites are small ones aimed at the run's in-cluster canary (a Pod + Service the
driver deploys), and nothing leaves this machine.

What the real one-node cluster now proves (harness/testing/cluster: the k3s case, enforcement,
a policy allowing port 53, hostNetwork, OOM kills, evictions, deadlines, tokens, gVisor as a
RuntimeClass, Ctrl-C) is not repeated here. What stays needs what a one-node cluster under Pod
Security "restricted" cannot give: two nodes, enforcement scripted to start late, a root pod with
a writable root filesystem, RBAC bindings made mid-test, a pending pod, a hanging API server.

Scenarios (one fake per test class, stopped in tearDown):
  LateEnforcement  --network-policy enforce-after=3 with an old policy and settledRerun: FAIL,
                   "enforced late for new pods".
  EveryNode        --nodes n1,n2 --network-policy enforce-on=n1, `run --nodes all`.
  Workloads        a writable root.
  Interrupt        SIGINT while the canary is pending; the API server hangs mid-run: nothing
                   left (Jobs, Pods, Services, NetworkPolicies, containers), `sandprobe cleanup`.
  CleanupCommand   objects planted with a dead and a live run's label: only the dead go.
  Render           `sandprobe render` of manifests/kubernetes/deny-egress.yaml.
  CiManifests      ci/kubernetes/*.yaml parse, RBAC verbs are exactly the driver's.
YAML is read with the small block-style reader below (stdlib only, no PyYAML).
"""
import fcntl
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

import e2e_util as u

FAKE = os.path.join(u.HOME, "harness", "testing", "fake_kube", "fake_kube.py")
sys.path.insert(0, os.path.dirname(FAKE))
from test_fake_kube import wait_for  # noqa: E402 (the fake's self-test and these poll alike)
KUBE = os.path.join(u.MANIFESTS, "kubernetes")
OPEN = os.path.join(KUBE, "open.yaml")  # also used by ci/bench/reliability.d/interrupts
DENY = os.path.join(KUBE, "deny-egress.yaml")
GVISOR = os.path.join(KUBE, "gvisor.yaml")
EGRESS_SUITE = os.path.join(u.HOME, "suites", "kubernetes-egress.yaml")
CI_KUBE = os.path.join(u.HOME, "ci", "kubernetes")
NS = "sandprobe"
RUN_LABEL = "sandprobe.io/run"
IMAGE = "sandprobe-probe:local"  # built offline by ci/images/probe-image; never pulled
# Traffic rows of the egress suite (judged on policy arms), and the one no pod here can route.
TRAFFIC_ROWS = ["net.dns", "net.http-by-name", "net.tcp-by-ip", "net.udp", "net.k8s-api"]
METADATA = "net.metadata"
# The cloud metadata shapes aimed at the in-cluster canary, and the credential row.
CLOUD_ROWS = ["net.metadata-imdsv2", "net.metadata-gcp", "net.metadata-azure"]
CLOUD_CRED = "cred.cloud-metadata"
BANNER = "NetworkPolicy is accepted but not enforced on this cluster"
LATE = "NetworkPolicy is enforced late for new pods"
FAST = ["--default-timeout", "6", "--grace", "3"]
PY = "/usr/bin/python3"  # the pyenv shim on PATH fails in stripped environments
# The fake's admission (like a ValidatingAdmissionPolicy) demands runtimeClassName of bare pods;
# the fake maps runtime class runc to docker's runc. The in-cluster canary is a bare pod.
CANARY_TEMPLATE = "canaryTemplate: {spec: {runtimeClassName: runc}}"


def cluster_params(**rows):
    """Suite params for the egress rows, aimed at the in-cluster canary."""
    base = {"net.dns": {"server": "{canary.cluster.dns}"},
            "net.http-by-name": {"url": "http://{canary.cluster.name}/"},
            "net.tcp-by-ip": {"target": "{canary.cluster.tcp}"},
            "net.udp": {"target": "{canary.cluster.udp}"},
            "net.k8s-api": {"target": "kubernetes.default.svc:443", "scheme": "https"}}
    base.update(rows)
    return base


# --- the fake API server ---------------------------------------------------------------------

class Fake:
    """A running fake_kube.py --kubelet docker (its own temp dir, kubeconfig, CA, pod network)."""

    def __init__(self, *args):
        self.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-kube-fake-")
        d = self.tmp.name
        self.kubeconfig = os.path.join(d, "kubeconfig")
        self.out = open(os.path.join(d, "stdout"), "w+")
        self.err = open(os.path.join(d, "stderr"), "w+")
        self.proc = subprocess.Popen([PY, FAKE, "--kubelet", "docker", "--kubeconfig-out",
                                      self.kubeconfig, "--state-dir", d,
                                      "--runtime-classes", "gvisor=runsc,runc=runc"] + list(args),
                                     stdout=self.out, stderr=self.err, stdin=subprocess.DEVNULL)
        end = time.monotonic() + 60
        while True:
            with open(os.path.join(d, "stdout")) as f:
                m = re.search(r"^READY (https://127\.0\.0\.1:\d+)$", f.read(), re.M)
            if m:
                self.url = m.group(1)
                break
            if self.proc.poll() is not None or time.monotonic() > end:
                why = self.stderr()  # read before stop() removes the folder
                self.stop()
                raise AssertionError("fake_kube.py did not start: %s" % why)
            time.sleep(0.05)
        self.ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
        with open(self.kubeconfig) as f:
            self.token = re.search(r"^\s*token:\s*(\S+)", f.read(), re.M).group(1)

    def stderr(self):
        with open(os.path.join(self.tmp.name, "stderr")) as f:
            return f.read()[-3000:]

    def env(self, **extra):
        return dict(KUBECONFIG=self.kubeconfig, **extra)

    def request(self, method, path, body=None, auth=True, timeout=10):
        """-> (status, parsed JSON body)."""
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.url + path, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def state(self):
        status, body = self.request("GET", "/fake/state", auth=False)
        assert status == 200, status
        return body

    def script(self, **settings):
        status, body = self.request("POST", "/fake/script", settings, auth=False)
        assert status == 200, (status, body)

    def requests(self):
        status, body = self.request("GET", "/fake/requests", auth=False)
        assert status == 200, status
        return body["requests"]

    def objects_of_run(self, run_id):
        """["jobs/<name>", "pods/<name>", "services/<name>", "networkpolicies/<name>"] labelled
        with the run."""
        objs = self.state()["objects"]
        return sorted("%s/%s" % (kind, o["metadata"]["name"])
                      for kind in ("jobs", "pods", "services", "networkpolicies")
                      for o in objs[kind]
                      if (o["metadata"].get("labels") or {}).get(RUN_LABEL) == run_id)

    def pod_containers(self):
        """Names of this fake's containers that belong to a pod (its node containers left out)."""
        status, body = self.request("GET", "/fake/containers", auth=False)
        assert status == 200, status
        return sorted(c["name"] for c in body["containers"] if c.get("pod"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: the fake removes its containers and network, exits 0
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.out.close()
        self.err.close()
        self.tmp.cleanup()


def copy_manifest(src, dst, control=None, drop=(), add=()):
    """A copy of a shipped kubernetes manifest for the fake: its image replaced by the probe image
    built here, `control:` made absolute, kubernetes-section lines whose key is in `drop` removed,
    `add` lines (and the canary template) appended to the kubernetes: section (the last one)."""
    with open(src) as f:
        lines = f.read().rstrip("\n").split("\n")
    out = []
    for line in lines:
        key = line.strip().split(":", 1)[0]
        if line.startswith("control:") and control:
            line = "control: %s" % json.dumps(control)
        elif line.startswith("  ") and (key in drop or key == "image"):
            continue
        out.append(line)
    top = [line for line in out if line and not line.startswith((" ", "#"))]
    if not top or top[-1] != "kubernetes:":
        raise AssertionError("%s: expected the kubernetes: section last" % src)
    if control and not any(line.startswith("control: ") and control in line for line in out):
        raise AssertionError("%s has no control: line to point at %s" % (src, control))
    extra = ["image: %s" % IMAGE, CANARY_TEMPLATE] + list(add)
    with open(dst, "w") as f:
        f.write("\n".join(out + ["  " + a for a in extra]) + "\n")
    return dst


def write_kube_manifest(path, name, control=None, policy=False, extra=(), timeout=None,
                        limits=None, canary_template=CANARY_TEMPLATE):
    """A kubernetes manifest in namespace sandprobe with the probe image; `timeout` (s) is its
    limits.timeout (the container's `timeout`), default 8 s for a policy arm, none for a control.
    `policy`: True for deny-all-egress, or a NetworkPolicy file path."""
    lines = ["name: %s" % name, "driver: kubernetes"]
    if control:
        lines.append("control: %s" % json.dumps(control))
    timeout = timeout or (8 if policy else None)
    lim = dict(limits or {})
    if timeout:
        lim["timeout"] = "%ds" % timeout
    if lim:
        lines.append("limits: {%s}" % ", ".join("%s: %s" % kv for kv in lim.items()))
    lines += ["kubernetes:", "  namespace: %s" % NS, "  image: %s" % IMAGE,
              "  " + canary_template]
    if policy:
        lines.append("  networkPolicy: %s" % ("deny-all-egress" if policy is True
                                              else json.dumps(policy)))
    lines += ["  " + e for e in extra]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


class FakeRun(u.ReportReading, unittest.TestCase):
    """One fake (FAKE_ARGS) and one sandprobe run (cls.run_args()) made in setUpClass."""
    FAKE_ARGS = ()

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-kube-")
        cls.fake = Fake(*cls.FAKE_ARGS)
        try:
            cls.out = os.path.join(cls.tmp.name, "out")
            cls.canary = os.path.join(cls.tmp.name, "canary")
            t0 = time.monotonic()
            cls.res = u.run_sandprobe(["run", "--out", cls.out, "--canary-dir", cls.canary,
                                       "--no-color"] + cls.run_args(), timeout=240,
                                      env=cls.fake.env())
            cls.wall = time.monotonic() - t0
            cls.report = u.report_or_none(cls.out)
            cls.left = cls.fake.objects_of_run(cls.report["run_id"]) if cls.report else None
            cls.containers = cls.fake.pod_containers()
        except BaseException:
            cls.fake.stop()
            cls.tmp.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.fake.stop()
        cls.tmp.cleanup()

    @classmethod
    def policy_run(cls, arm, rows, policy=True, extra=(), params=None, flags=()):
        """Run args: `rows` (aimed at the in-cluster canary) in a control "k8s-open" and a
        candidate `arm` under `policy` with `extra` kubernetes lines."""
        d = cls.tmp.name
        ctl = write_kube_manifest(os.path.join(d, "open.yaml"), "k8s-open")
        cand = write_kube_manifest(os.path.join(d, "candidate.yaml"), arm, control=ctl,
                                   policy=policy, extra=extra)
        suite = u.write_suite(d, "suite-" + arm, rows, params=params or cluster_params())
        return ["--suite", suite, "--sandbox", cand] + list(flags) + FAST

    def assert_nothing_left(self):
        self.assertEqual(self.left, [])
        self.assertEqual(self.containers, [])


# --- the API calls a run makes --------------------------------------------------------------

# The API calls a run makes -> RBAC (apiGroup, resource, verb). Paths the fake serves.
API_CALL = [
    (r"^GET /version$", None),
    (r"^GET /apis/networking\.k8s\.io/v1$", None),  # discovery: a non-resource URL
    (r"^GET /api/v1/namespaces/[^/]+$", ("", "namespaces", "get")),
    (r"^GET /api/v1/nodes$", ("", "nodes", "list")),
    (r"^(POST|GET|DELETE) /apis/batch/v1/namespaces/[^/]+/jobs(/[^/]+)?$", "batch/jobs"),
    (r"^(POST|GET|DELETE) /api/v1/namespaces/[^/]+/pods$", "/pods"),
    (r"^GET /api/v1/namespaces/[^/]+/pods/[^/]+/log$", ("", "pods/log", "get")),
    (r"^(POST|GET|DELETE) /api/v1/namespaces/[^/]+/services(/[^/]+)?$", "/services"),
    (r"^GET /api/v1/namespaces/[^/]+/events$", ("", "events", "list")),
    (r"^(POST|GET|DELETE) /apis/networking\.k8s\.io/v1/namespaces/[^/]+/networkpolicies(/[^/]+)?$",
     "networking.k8s.io/networkpolicies"),
    (r"^GET /apis/networking\.k8s\.io/v1/networkpolicies$",
     ("networking.k8s.io", "networkpolicies", "list")),
    (r"^GET /apis/apps/v1/namespaces/kube-system/daemonsets$", ("apps", "daemonsets", "list")),
]


def rbac_verb(method, path):
    """(group, resource, verb) of one API request, None for a non-resource URL; raises on a
    request this table does not know (a new call must be added here and to ci/kubernetes)."""
    bare, _, query = path.partition("?")
    watch = "watch=1" in query or "watch=true" in query
    for pattern, what in API_CALL:
        if not re.match(pattern, "%s %s" % (method, bare)):
            continue
        if what is None or isinstance(what, tuple):
            return what
        group, resource = what.split("/", 1)
        named = bare.rstrip("/").split("/")[-1] != resource
        verb = {("POST", False): "create", ("GET", True): "get", ("GET", False): "list",
                ("DELETE", True): "delete", ("DELETE", False): "deletecollection"}[
            (method, named)]
        if watch:
            verb = "watch"
        return (group, resource, verb)
    raise AssertionError("an API call no table row names: %s %s" % (method, path))


def granted_by_ci_kubernetes():
    """{(apiGroup, resource, verb)} that ci/kubernetes/rbac.yaml and rbac-cluster.yaml grant."""
    allowed = set()
    for name in ("rbac.yaml", "rbac-cluster.yaml"):
        with open(os.path.join(CI_KUBE, name)) as f:
            for d in parse_yaml_documents(f.read()):
                if d.get("kind") in ("Role", "ClusterRole"):
                    for rule in d["rules"]:
                        for g in rule["apiGroups"]:
                            for r in rule["resources"]:
                                allowed.update((g, r, v) for v in rule["verbs"])
    return allowed


def assert_calls_granted(test, fake, skip=lambda r: False):
    """Every API request sandprobe made to `fake` is granted by ci/kubernetes; returns them.
    `skip` leaves out the requests a test made itself; what pods asked with their own tokens
    (the fake's pod-network listener) is not sandprobe's."""
    used = {rbac_verb(r["method"], r["path"]) for r in fake.requests()
            if not skip(r) and r["listener"] == "loopback"} - {None}
    test.assertLessEqual(used, granted_by_ci_kubernetes(), "calls the RBAC files do not grant")
    return used


# --- e. late enforcement for new pods ----------------------------------------------------------

class LateEnforcement(FakeRun):
    FAKE_ARGS = ("--network-policy", "enforce-after=3")

    @classmethod
    def run_args(cls):
        return cls.policy_run("k8s-deny", ["net.tcp-by-ip", "net.udp"],
                              extra=["minPolicyAge: 2s", "settledRerun: 6s"])

    def test_fresh_pods_leak_settled_pods_hold_and_the_banner_says_late(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        for probe in ("net.tcp-by-ip", "net.udp"):
            self.assertEqual(self.verdict("k8s-deny", probe)["verdict"], "FAIL", probe)
            self.assertGreaterEqual(
                self.cell("k8s-deny", probe)["evidence"]["driver_facts"]["policy_age_s"], 2)
            self.assertEqual(self.verdict("k8s-deny-settled", probe)["verdict"], "PASS", probe)
            self.assertEqual(
                self.cell("k8s-deny-settled", probe)["evidence"]["driver_facts"]["pod_settle_s"],
                6)
        banners = self.report["banners"]
        self.assertEqual(len(banners), 1, banners)
        self.assertTrue(banners[0].startswith(LATE), banners)
        self.assertIn("k8s-deny-settled held them in pods that waited 6s", banners[0])
        self.assertNotIn(BANNER, self.res.stdout)
        self.assert_nothing_left()


# --- f. every node ---------------------------------------------------------------------------

class EveryNode(FakeRun):
    FAKE_ARGS = ("--nodes", "n1,n2", "--network-policy", "enforce-on=n1")

    @classmethod
    def run_args(cls):
        return cls.policy_run("k8s-deny", ["net.dns", "net.tcp-by-ip"],
                              flags=["--nodes", "all"])

    def test_one_column_per_node(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        self.assertEqual(sorted(a["name"] for a in self.report["arms"]),
                         ["k8s-deny@n1", "k8s-deny@n2", "k8s-open@n1", "k8s-open@n2"])
        for arm in ("k8s-deny@n1", "k8s-deny@n2", "k8s-open@n1", "k8s-open@n2"):
            for probe in ("net.dns", "net.tcp-by-ip"):
                facts = self.cell(arm, probe)["evidence"]["driver_facts"]
                self.assertEqual(facts["node"], arm.split("@")[1], (arm, probe))

    def test_node_listing_is_granted_too(self):
        self.assertIn(("", "nodes", "list"), assert_calls_granted(self, self.fake))

    def test_n2_reaches_n1_blocks_and_banner_names_n2(self):
        for probe in ("net.dns", "net.tcp-by-ip"):
            self.assertEqual(self.verdict("k8s-deny@n1", probe)["verdict"], "PASS")
            self.assertEqual(self.verdict("k8s-deny@n2", probe)["verdict"], "FAIL")
            self.assertEqual(self.cell("k8s-deny@n2", probe)["label"], "REACHED")
        self.assertEqual(len(self.report["banners"]), 1, self.report["banners"])
        self.assertIn("k8s-deny@n2", self.report["banners"][0])
        self.assertNotIn("k8s-deny@n1", self.report["banners"][0])
        self.assert_nothing_left()


# --- g. what the kubelet enforces --------------------------------------------------------------

class Workloads(FakeRun):
    """A root pod with a writable root filesystem, which the real cluster's sandprobe namespace
    (Pod Security "restricted") refuses. OOM kills, evictions, deadlines and tokens are measured
    on the real cluster (harness/testing/cluster/test_cluster_workloads.py), gVisor as a
    RuntimeClass too (test_cluster_gvisor.py)."""
    FAKE_ARGS = ("--network-policy", "enforce")

    @classmethod
    def run_args(cls):
        d = cls.tmp.name
        ctl = write_kube_manifest(os.path.join(d, "open.yaml"), "k8s-open")
        hardened = write_kube_manifest(os.path.join(d, "hardened.yaml"), "k8s-hardened",
                                       control=ctl, policy=True, timeout=20)
        # Root with a writable root filesystem.
        weak = write_kube_manifest(
            os.path.join(d, "weak.yaml"), "k8s-weak", control=ctl, policy=True, extra=[
                "jobTemplate: {spec: {template: {spec: {"
                "securityContext: {runAsNonRoot: false, runAsUser: 0, runAsGroup: 0}, "
                "containers: [{name: probe, securityContext: {readOnlyRootFilesystem: false}}]}}}}"])
        suite = u.write_suite(d, "workloads", ["fs.write-root"])
        return ["--suite", suite, "--sandbox", hardened, "--sandbox", weak] + FAST

    def test_writable_root_fails(self):
        self.assertEqual(self.verdict("k8s-weak", "fs.write-root")["verdict"], "FAIL")
        # Held, but the same-driver control is read-only and non-root too: it cannot show that
        # the probe detects a writable root here, so the hardened cell is contained, not a PASS.
        self.assertEqual(self.cell("k8s-hardened", "fs.write-root")["exposure"], "contained")
        self.assertEqual(self.verdict("k8s-hardened", "fs.write-root")["verdict"], "INCONCLUSIVE")
        self.assert_nothing_left()


# --- h. Ctrl-C and a dead API server ---------------------------------------------------------

class Interrupt(unittest.TestCase):
    def setUp(self):
        u.require_sandprobe()
        self.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-kube-int-")
        self.fake = Fake("--network-policy", "enforce")

    def tearDown(self):
        self.fake.stop()
        self.tmp.cleanup()

    def start_run(self, extra_manifest_lines=()):
        d = self.tmp.name
        # Both loops end by their container's own `timeout 8` at the latest.
        ctl = write_kube_manifest(os.path.join(d, "open.yaml"), "k8s-open",
                                  extra=extra_manifest_lines, timeout=8)
        deny = write_kube_manifest(os.path.join(d, "deny.yaml"), "k8s-deny", control=ctl,
                                   policy=True, extra=extra_manifest_lines)
        suite = u.write_suite(d, "kube-int", ["net.dns", "res.cpu-loop"],
                              params=cluster_params())
        self.out, self.canary = os.path.join(d, "out"), os.path.join(d, "canary")
        return subprocess.Popen(
            [u.BIN, "run", "--suite", suite, "--sandbox", deny, "--out", self.out,
             "--canary-dir", self.canary, "--default-timeout", "20", "--grace", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=dict(os.environ, SANDPROBE_HOME=u.HOME, **self.fake.env()))

    def wait_for_running_loops(self, p):
        """The run id once both arms' res.cpu-loop pods are Running in the fake."""
        def running():
            if p.poll() is not None:
                raise AssertionError("sandprobe ended early: %s" % p.communicate()[1][-3000:])
            objs = self.fake.state()["objects"]
            loops = {j["metadata"]["name"]: j["metadata"]["labels"][RUN_LABEL]
                     for j in objs["jobs"]
                     if j["metadata"].get("annotations", {}).get("sandprobe.io/probe")
                     == "res.cpu-loop"}
            pods = [q for q in objs["pods"] if q["status"].get("phase") == "Running"
                    and q["metadata"]["labels"].get("job-name") in loops]
            return len(pods) >= 2 and next(iter(loops.values()))
        return wait_for(running, 90, what="two running res.cpu-loop pods")

    def test_ctrl_c_while_the_canary_is_pending_removes_it(self):
        # The canary's nodeSelector matches no node: it stays Pending, the driver waits for it
        # (podStartTimeout 120 s) and Ctrl-C must end that wait and remove what was created.
        d = self.tmp.name
        m = write_kube_manifest(
            os.path.join(d, "pending-open.yaml"), "k8s-open", canary_template=(
                "canaryTemplate: {spec: {runtimeClassName: runc, nodeSelector: {no-such: node}}}"))
        suite = u.write_suite(d, "pending", ["net.tcp-by-ip"], params=cluster_params())
        p = subprocess.Popen(
            [u.BIN, "run", "--suite", suite, "--sandbox", m, "--out", os.path.join(d, "out"),
             "--canary-dir", os.path.join(d, "canary")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=dict(os.environ, SANDPROBE_HOME=u.HOME, **self.fake.env()))

        def pending_canary():
            if p.poll() is not None:
                raise AssertionError("sandprobe ended early: %s" % p.communicate()[1][-3000:])
            pods = [q for q in self.fake.state()["objects"]["pods"]
                    if (q["metadata"].get("labels") or {}).get("sandprobe.io/role") == "canary"]
            return pods and pods[0]["metadata"]["labels"][RUN_LABEL]
        run_id = wait_for(pending_canary, 30, what="the pending canary Pod")
        time.sleep(1)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        self.assertLess(time.monotonic() - t0, 20, "Ctrl-C did not end the canary's wait")
        err = err.decode("utf-8", "replace")
        self.assertIn("interrupted before any probe ran", err)
        # An interrupted run, not a setup error a CI job would blame on its manifest (found by
        # ci/bench/reliability.d/interrupts: Ctrl-C at 2 s of a fake-cluster run exited 3).
        self.assertEqual(p.returncode, 2, err[-3000:])
        self.assertFalse(os.path.exists(os.path.join(d, "out", "report.json")))
        self.assertEqual(self.fake.objects_of_run(run_id), [])

    def test_dead_api_server_error_cells_exit_2_then_cleanup(self):
        p = self.start_run(["apiTimeout: 2s", "podStartTimeout: 20s"])
        run_id = self.wait_for_running_loops(p)
        t0 = time.monotonic()
        self.fake.script(faults=["hang-after=0"])  # every API request hangs from now on
        try:
            _, err = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise AssertionError("sandprobe hung on a dead API server")
        err = err.decode("utf-8", "replace")
        wall = time.monotonic() - t0
        self.assertEqual(p.returncode, 2, err[-3000:])
        self.assertLess(wall, 75, "a dead API server must not hold the run")
        report = u.load_report(self.out)
        self.assertFalse(report["interrupted"])
        loop = u.verdicts(report, "k8s-deny")["res.cpu-loop"]
        self.assertEqual(loop["verdict"], "ERROR", loop)
        self.assertIn("API server does not answer", err)
        # The API server answers again: what the run could not delete is still there, labelled,
        # and `sandprobe cleanup --kubernetes` removes it (the run is over: its lock is free).
        self.fake.script(faults=[])
        left = self.fake.objects_of_run(run_id)
        self.assertTrue(any(o.startswith("jobs/") for o in left), left)
        self.assertTrue(any(o.startswith("services/") for o in left), left)
        res = u.run_sandprobe(
            ["cleanup", "--canary-dir", self.canary, "--tmp", self.tmp.name,
             "--kubernetes", os.path.join(self.tmp.name, "deny.yaml")], timeout=60,
            env=self.fake.env(DOCKER_HOST="unix://%s/no-docker.sock" % self.tmp.name))
        self.assertEqual(res.returncode, 0, res.describe())
        for o in left:
            self.assertIn("removed kubernetes %s/%s (run %s)" % (NS, o, run_id), res.stdout)
        self.assertEqual(self.fake.objects_of_run(run_id), [])
        wait_for(lambda: self.fake.pod_containers() == [], 20, what="pod containers to go")


class CleanupCommand(unittest.TestCase):
    def setUp(self):
        u.require_sandprobe()
        self.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-kube-clean-")
        self.fake = Fake()

    def tearDown(self):
        self.fake.stop()
        self.tmp.cleanup()

    def plant(self, run, folder=None):
        """A Job (+ its pod), a NetworkPolicy and a Service labelled as run `run`'s; with
        `folder`, annotated with it as the driver annotates its objects (sandprobe.io/run-folder)."""
        labels = {RUN_LABEL: run, "sandprobe.io/arm": "planted"}
        notes = {"sandprobe.io/run-folder": folder} if folder else {}
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "%s-job" % run, "labels": labels, "annotations": notes},
               "spec": {"backoffLimit": 0, "template": {
                   "metadata": {"labels": labels, "annotations": notes},
                   "spec": {"restartPolicy": "Never", "containers": [
                       {"name": "probe", "image": IMAGE, "command": ["sleep", "60"]}]}}}}
        pol = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "%s-policy" % run, "labels": labels, "annotations": notes},
               "spec": {"podSelector": {"matchLabels": labels}, "policyTypes": ["Egress"],
                        "egress": []}}
        svc = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "%s-svc" % run, "labels": labels, "annotations": notes},
               "spec": {"selector": labels, "ports": [{"port": 80, "protocol": "TCP"}]}}
        for path, body in (("/apis/batch/v1/namespaces/%s/jobs" % NS, job),
                           ("/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies" % NS, pol),
                           ("/api/v1/namespaces/%s/services" % NS, svc)):
            status, reply = self.fake.request("POST", path, body)
            self.assertEqual(status, 201, reply)
        wait_for(lambda: any(o.startswith("pods/") for o in self.fake.objects_of_run(run)), 20,
                 what="the planted Job's pod")

    def test_removes_dead_runs_objects_and_spares_a_live_run(self):
        d = self.tmp.name
        for run in ("sp-dead-run", "sp-live-run"):
            self.plant(run)
        dead = self.fake.objects_of_run("sp-dead-run")
        self.assertEqual([o.split("/")[0] for o in dead],
                         ["jobs", "networkpolicies", "pods", "services"])
        manifest = write_kube_manifest(os.path.join(d, "m.yaml"), "k8s-open")
        # A live run holds the flock on <canary dir>/<run id>/.lock.
        canary = os.path.join(d, "canary")
        os.makedirs(os.path.join(canary, "sp-live-run"))
        env = self.fake.env(DOCKER_HOST="unix://%s/no-docker.sock" % d)
        args = ["cleanup", "--canary-dir", canary, "--tmp", d, "--kubernetes", manifest]
        with open(os.path.join(canary, "sp-live-run", ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            dry = u.run_sandprobe(args + ["--dry-run"], timeout=60, env=env)
            self.assertEqual(dry.returncode, 0, dry.describe())
            self.assertIn("would remove kubernetes %s/%s (run sp-dead-run)" % (NS, dead[0]),
                          dry.stdout)
            self.assertEqual(self.fake.objects_of_run("sp-dead-run"), dead)
            res = u.run_sandprobe(args, timeout=60, env=env)
        self.assertEqual(res.returncode, 0, res.describe())
        for o in dead:
            self.assertIn("removed kubernetes %s/%s (run sp-dead-run)" % (NS, o), res.stdout)
        self.assertIn("4 object(s) of a running sandprobe (run sp-live-run), left alone",
                      res.stdout)
        self.assertEqual(self.fake.objects_of_run("sp-dead-run"), [])
        self.assertEqual(len(self.fake.objects_of_run("sp-live-run")), 4)
        # The lock is released: the next cleanup takes the live run's objects too.
        res = u.run_sandprobe(args, timeout=60, env=env)
        self.assertEqual(res.returncode, 0, res.describe())
        self.assertEqual(self.fake.objects_of_run("sp-live-run"), [])
        # The sweep's own calls (the planting POSTs and GETs were the test's) are granted.
        used = assert_calls_granted(self, self.fake, skip=lambda r: r["method"] == "POST")
        self.assertIn(("", "services", "delete"), used)

    def test_a_live_run_with_another_canary_dir_is_spared_by_its_folder(self):
        # The run's objects name its canary folder (annotation sandprobe.io/run-folder, set by
        # the driver): a cleanup with another --canary-dir (another HOME) still sees that the
        # run is alive while that folder's lock is held, and leaves its objects alone.
        d = self.tmp.name
        elsewhere = os.path.join(d, "other-home", "canary", "sp-far-run")
        os.makedirs(elsewhere)
        self.plant("sp-far-run", folder=elsewhere)
        self.assertEqual(len(self.fake.objects_of_run("sp-far-run")), 4)
        manifest = write_kube_manifest(os.path.join(d, "m.yaml"), "k8s-open")
        args = ["cleanup", "--canary-dir", os.path.join(d, "canary"), "--tmp", d, "--kubernetes",
                manifest]
        env = self.fake.env(DOCKER_HOST="unix://%s/no-docker.sock" % d)
        with open(os.path.join(elsewhere, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            res = u.run_sandprobe(args, timeout=60, env=env)
        self.assertEqual(res.returncode, 0, res.describe())
        self.assertIn("4 object(s) of a running sandprobe (run sp-far-run), left alone",
                      res.stdout)
        self.assertEqual(len(self.fake.objects_of_run("sp-far-run")), 4)
        res = u.run_sandprobe(args, timeout=60, env=env)  # the lock is free: the run is over
        self.assertEqual(res.returncode, 0, res.describe())
        self.assertEqual(self.fake.objects_of_run("sp-far-run"), [])

    def test_run_keeps_the_sweep_to_one_run(self):
        # `cleanup --run`: a cluster other people's runs share; their objects are not looked at,
        # even when their canary folder is not in this canary dir (docs/design.md, "Cleanup").
        d = self.tmp.name
        for run in ("sp-one-run", "sp-other-run"):
            self.plant(run)
        other = self.fake.objects_of_run("sp-other-run")
        manifest = write_kube_manifest(os.path.join(d, "m.yaml"), "k8s-open")
        res = u.run_sandprobe(
            ["cleanup", "--canary-dir", os.path.join(d, "canary"), "--tmp", d, "--kubernetes",
             manifest, "--run", "sp-one-run"], timeout=60,
            env=self.fake.env(DOCKER_HOST="unix://%s/no-docker.sock" % d))
        self.assertEqual(res.returncode, 0, res.describe())
        self.assertEqual(self.fake.objects_of_run("sp-one-run"), [])
        self.assertEqual(self.fake.objects_of_run("sp-other-run"), other)
        self.assertNotIn("sp-other-run", res.stdout)

    def test_unreachable_cluster_is_an_error(self):
        self.fake.script(faults=["hang-after=0"])
        m = write_kube_manifest(os.path.join(self.tmp.name, "m.yaml"), "k8s-open",
                                extra=["apiTimeout: 1s"])
        res = u.run_sandprobe(["cleanup", "--canary-dir", self.tmp.name, "--tmp", self.tmp.name,
                               "--kubernetes", m], timeout=60,
                              env=self.fake.env(DOCKER_HOST="unix://%s/x.sock" % self.tmp.name))
        self.assertEqual(res.returncode, 1, res.describe())
        self.assertIn("kubernetes error", res.stdout)
        self.assertNotIn(self.fake.token, res.stdout + res.stderr)


# --- i. render -------------------------------------------------------------------------------

class Render(unittest.TestCase):
    def test_deny_egress_objects_are_the_hardened_defaults(self):
        u.require_sandprobe()
        res = u.run_sandprobe(["render", "--sandbox", DENY, "--suite", EGRESS_SUITE], timeout=30)
        self.assertEqual(res.returncode, 0, res.describe())
        docs = parse_yaml_documents(res.stdout)
        kinds = [d["kind"] for d in docs]
        self.assertEqual(kinds, ["NetworkPolicy", "Service", "Pod"] + ["Job"] * 11 + ["Pod", "Job"],
                         kinds)
        pol, svc, canary = docs[0], docs[1], docs[2]
        self.assertEqual(pol["apiVersion"], "networking.k8s.io/v1")
        self.assertEqual(pol["spec"]["policyTypes"], ["Egress"])
        self.assertEqual(pol["spec"]["egress"], [])
        self.assertEqual(pol["spec"]["podSelector"]["matchLabels"],
                         {"sandprobe.io/arm": "k8s-deny-egress", RUN_LABEL: "render"})
        # The in-cluster canary: a Service selecting a hardened Pod no arm's policy selects.
        self.assertEqual(svc["spec"]["type"], "ClusterIP")
        self.assertEqual(svc["spec"]["selector"], canary["metadata"]["labels"])
        self.assertNotIn("sandprobe.io/arm", canary["metadata"]["labels"])
        self.assertIs(canary["spec"]["automountServiceAccountToken"], False)
        (cc,) = canary["spec"]["containers"]
        self.assertIs(cc["securityContext"]["readOnlyRootFilesystem"], True)
        self.assertEqual(sorted((p["port"], p["protocol"]) for p in svc["spec"]["ports"]),
                         [(53, "TCP"), (53, "UDP"), (80, "TCP"), (7000, "TCP"), (7001, "UDP")])
        probes = []
        for job in docs[3:14]:
            self.assertEqual(job["apiVersion"], "batch/v1")
            self.assertEqual(job["metadata"]["namespace"], NS)
            spec = job["spec"]
            self.assertEqual(spec["backoffLimit"], 0)
            self.assertGreater(spec["activeDeadlineSeconds"], 10)
            self.assertEqual(spec["ttlSecondsAfterFinished"], 300)
            pod = spec["template"]["spec"]
            # The policy selects these pods: the template carries its labels.
            for k, v in pol["spec"]["podSelector"]["matchLabels"].items():
                self.assertEqual(spec["template"]["metadata"]["labels"][k], v)
            self.assertIs(pod["automountServiceAccountToken"], False)
            self.assertIs(pod["enableServiceLinks"], False)
            self.assertEqual(pod["restartPolicy"], "Never")
            self.assertEqual(pod["securityContext"]["runAsUser"], 65534)
            self.assertIs(pod["securityContext"]["runAsNonRoot"], True)
            (c,) = pod["containers"]
            self.assertEqual(c["name"], "probe")
            self.assertIs(c["securityContext"]["readOnlyRootFilesystem"], True)
            self.assertIs(c["securityContext"]["allowPrivilegeEscalation"], False)
            self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])
            self.assertEqual(c["resources"]["limits"]["memory"], "256Mi")
            # stderr to the termination message, out of pods/log (docs/traps.md, trap 44)
            self.assertEqual(c["command"][:4], ["python3", "-I", "-S", "-c"])
            self.assertIn("stderr_tail.py", c["command"][4])
            self.assertEqual(c["command"][5:7], ["/dev/termination-log", "0"])
            self.assertEqual(c["terminationMessagePolicy"], "File")
            probe_cmd = c["command"][7:]
            self.assertEqual(probe_cmd[:9], ["timeout", "-k", "2", "10", "python3", "-I", "-S",
                                             "-u", "-c"])
            self.assertEqual(len(probe_cmd), 10)  # the script is ONE argument
            probes.append(re.match(r"# sandprobe probe (\S+)\n", probe_cmd[9]).group(1))
            self.assertEqual(job["metadata"]["annotations"]["sandprobe.io/probe"], probes[-1])
            self.assertEqual(c["volumeMounts"], [{"mountPath": "/tmp", "name": "tmp"}])
            self.assertEqual(pod["volumes"], [{"emptyDir": {"sizeLimit": "32Mi"}, "name": "tmp"}])
        self.assertEqual(probes, TRAFFIC_ROWS[:4] + ["net.k8s-api", METADATA] + CLOUD_ROWS +
                         [CLOUD_CRED, "net.interfaces"])
        adm = docs[14]
        self.assertEqual(adm["metadata"]["annotations"]["sandprobe.io/probe"],
                         "platform.runtime-class")
        self.assertNotIn("runtimeClassName", adm["spec"])
        self.assertIs(adm["spec"]["automountServiceAccountToken"], False)
        power = docs[15]  # what a mounted token may do: the hardened Job mounts none
        self.assertEqual(power["metadata"]["annotations"]["sandprobe.io/probe"],
                         "cred.sa-token-power")
        self.assertIs(power["spec"]["template"]["spec"]["automountServiceAccountToken"], False)


# --- ci/kubernetes ---------------------------------------------------------------------------

# Exactly the API calls harness/drivers/kubernetes/kubernetes_driver.cc makes (and `sandprobe
# cleanup --kubernetes`): resource -> verbs, in the namespaced Role.
DRIVER_VERBS = {
    ("batch", "jobs"): {"create", "get", "list", "delete", "deletecollection"},
    ("", "pods"): {"create", "list", "watch", "deletecollection"},
    ("", "pods/log"): {"get"},
    ("", "services"): {"create", "list", "delete"},
    ("", "events"): {"list"},
    ("networking.k8s.io", "networkpolicies"): {"create", "get", "list", "deletecollection"},
}


class CiManifests(unittest.TestCase):
    def load(self, name):
        with open(os.path.join(CI_KUBE, name)) as f:
            return parse_yaml_documents(f.read())

    def test_every_file_parses_and_names_the_namespace(self):
        names = sorted(n for n in os.listdir(CI_KUBE) if n.endswith(".yaml"))
        self.assertEqual(names, ["job.yaml", "namespace.yaml", "rbac-cluster.yaml", "rbac.yaml",
                                 "resourcequota.yaml", "sandbox-deny-egress.yaml",
                                 "sandbox-open.yaml"])
        for n in names:
            docs = self.load(n)
            self.assertTrue(docs, n)
            for d in docs:
                self.assertIsInstance(d, dict, n)
        (ns,) = self.load("namespace.yaml")
        self.assertEqual((ns["kind"], ns["metadata"]["name"]), ("Namespace", NS))

    def test_quota_is_a_rate_limit_on_jobs_and_pods(self):
        (q,) = self.load("resourcequota.yaml")
        self.assertEqual(q["kind"], "ResourceQuota")
        self.assertEqual(q["metadata"]["namespace"], NS)
        self.assertEqual(sorted(q["spec"]["hard"]), ["count/jobs.batch", "pods"])

    def test_role_has_exactly_the_drivers_verbs(self):
        docs = {d["kind"]: d for d in self.load("rbac.yaml")}
        self.assertEqual(sorted(docs), ["Role", "RoleBinding", "ServiceAccount"])
        got = {}
        for rule in docs["Role"]["rules"]:
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    got.setdefault((g, r), set()).update(rule["verbs"])
        self.assertEqual(got, DRIVER_VERBS)
        sa = docs["ServiceAccount"]["metadata"]["name"]
        self.assertEqual(docs["RoleBinding"]["subjects"],
                         [{"kind": "ServiceAccount", "name": sa, "namespace": NS}])
        cluster = {d["kind"]: d for d in self.load("rbac-cluster.yaml")}
        rules = {(r["resources"][0], tuple(r["verbs"])) for r in cluster["ClusterRole"]["rules"]}
        self.assertEqual(rules, {("nodes", ("list",)), ("namespaces", ("get",)),
                                 ("networkpolicies", ("list",)), ("daemonsets", ("list",))})

    def test_job_runs_sandprobe_in_cluster_as_the_service_account(self):
        docs = self.load("job.yaml")
        job = next(d for d in docs if d["kind"] == "Job")
        rbac = {d["kind"]: d for d in self.load("rbac.yaml")}
        pod = job["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], rbac["ServiceAccount"]["metadata"]["name"])
        self.assertIn("run", pod["containers"][0]["args"])
        for name in ("sandbox-open.yaml", "sandbox-deny-egress.yaml"):
            with open(os.path.join(CI_KUBE, name)) as f:
                self.assertIn("kubeconfig: in-cluster", f.read())
        res = u.run_sandprobe(["validate", os.path.join(CI_KUBE, "sandbox-open.yaml"),
                               os.path.join(CI_KUBE, "sandbox-deny-egress.yaml")], timeout=30)
        self.assertEqual(res.returncode, 0, res.describe())


# --- a block-style YAML reader (the subset yaml-cpp emits and ci/kubernetes uses) -------------

def parse_yaml_documents(text):
    """Documents of a multi-document YAML text -> list of dicts/lists. Supports block maps and
    sequences, literal blocks (|, |-), plain / "double" / 'single' scalars, flat flow lists and
    maps of scalars, full-line and trailing comments. Raises ValueError on anything else."""
    docs, cur = [], []
    for line in text.split("\n"):
        if line.rstrip() == "---":
            docs.append(cur)
            cur = []
        else:
            cur.append(line)
    docs.append(cur)
    out = []
    for lines in docs:
        r = _Reader(lines)
        if r.peek() is None:
            continue
        value = r.node(r.peek()[0])
        if r.peek() is not None:
            raise ValueError("unparsed line: %r" % r.lines[r.i])
        out.append(value)
    return out


class _Reader:
    def __init__(self, lines):
        self.lines, self.i = list(lines), 0

    def peek(self):
        while self.i < len(self.lines):
            s = self.lines[self.i].strip()
            if s and not s.startswith("#"):
                line = self.lines[self.i]
                return len(line) - len(line.lstrip(" ")), s
            self.i += 1
        return None

    def node(self, indent):
        _, s = self.peek()
        return self.seq(indent) if s == "-" or s.startswith("- ") else self.map(indent)

    def seq(self, indent):
        out = []
        while True:
            p = self.peek()
            if p is None or p[0] != indent or not (p[1] == "-" or p[1].startswith("- ")):
                return out
            rest = p[1][1:].lstrip()
            if not rest:
                self.i += 1
                out.append(self.node(self.peek()[0]))
            elif rest in ("|", "|-"):
                self.i += 1
                out.append(self.literal(indent, rest))
            elif _key(rest) is not None:  # "- key: v": a map whose column is after the dash
                col = indent + len(p[1]) - len(rest)
                self.lines[self.i] = " " * col + rest
                out.append(self.map(col))
            else:
                self.i += 1
                out.append(_scalar(rest))

    def map(self, indent):
        out = {}
        while True:
            p = self.peek()
            if p is None or p[0] < indent:
                return out
            if p[0] > indent or _key(p[1]) is None:
                raise ValueError("bad line in a mapping: %r" % self.lines[self.i])
            key, rest = _key(p[1])
            self.i += 1
            if rest in ("|", "|-"):
                out[key] = self.literal(indent, rest)
            elif rest:
                out[key] = _scalar(rest)
            else:
                q = self.peek()
                nested = q is not None and (q[0] > indent or (q[0] == indent and (
                    q[1] == "-" or q[1].startswith("- "))))
                out[key] = self.node(q[0]) if nested else None

    def literal(self, parent, style):
        block = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and len(line) - len(line.lstrip(" ")) <= parent:
                break
            block.append(line)
            self.i += 1
        while block and not block[-1].strip():
            block.pop()
        if not block:
            return ""
        cut = min(len(b) - len(b.lstrip(" ")) for b in block if b.strip())
        text = "\n".join(b[cut:] for b in block)
        return text if style == "|-" else text + "\n"


def _key(s):
    m = re.match(r'^("[^"]*"|[^\s"\'#\[{][^:]*?):(?:\s+(.*))?$', s)
    if not m:
        return None
    key = json.loads(m.group(1)) if m.group(1).startswith('"') else m.group(1)
    return key, (m.group(2) or "").strip()


def _scalar(s):
    if s.startswith('"'):
        end = s.rindex('"')
        return json.loads(s[:end + 1])
    if s.startswith("'"):
        end = s.rindex("'")
        return s[1:end].replace("''", "'")
    s = re.sub(r"\s+#.*$", "", s)
    if s.startswith("[") and s.endswith("]"):
        inner = s[1:-1].strip()
        return [_scalar(x.strip()) for x in inner.split(",")] if inner else []
    if s.startswith("{") and s.endswith("}"):  # a flat flow map of scalars
        inner = s[1:-1].strip()
        pairs = [_key(x.strip()) for x in inner.split(",")] if inner else []
        if any(p is None or not p[1] for p in pairs):
            raise ValueError("unsupported flow map: %r" % s)
        return {k: _scalar(v) for k, v in pairs}
    if s.startswith(("{", "[", "&", "*", "!", "|", ">")):
        raise ValueError("unsupported YAML: %r" % s)
    if s in ("true", "false"):
        return s == "true"
    if s in ("null", "~"):
        return None
    if re.fullmatch(r"-?[0-9]+", s):
        return int(s)
    if re.fullmatch(r"-?[0-9]+\.[0-9]+", s):
        return float(s)
    return s


if __name__ == "__main__":
    unittest.main()
