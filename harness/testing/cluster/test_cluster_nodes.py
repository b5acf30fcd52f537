"""Real cluster, two nodes, kube-router on the first only (ci/cluster/up --nodes 2
--network-policy enforce-on=sandprobe-node): a cluster on which one node's policy controller is
not running. One start for the module (cluster_util.Fixture); each class is one scene.

  TwoNodes        the cluster's own facts: two Ready nodes, each with its own address, kube-router
                  running on sandprobe-node only.
  EveryNode       `run --nodes all`: one column per node; the settled column holds on
                  sandprobe-node and reaches on sandprobe-node2, and the banner names node 2's
                  columns, never node 1's.
  WritableRoot    a root pod with a writable root filesystem (in a namespace whose Pod Security
                  admits it): fs.write-root FAILs; the hardened arm is held but its read-only
                  control cannot show the probe detects a write: INCONCLUSIVE.
  PendingCanary   Ctrl-C while the run's canary Pod is Pending (its nodeSelector matches no node):
                  the wait ends at once, exit 2, nothing left.
  HungApiServer   kube-apiserver stopped (SIGSTOP) while the loops run: ERROR cells, exit 2 within
                  the client deadlines; once it runs again (SIGCONT), `sandprobe cleanup` removes
                  what the run could not.
  CleanupCommand  objects planted with a dead and a live run's labels: only the dead go; another
                  canary folder's live run is spared; --run keeps the sweep to one run; a hung API
                  server is an error that prints no token. As the least-privileged ServiceAccount
                  (ci/kubernetes/rbac.yaml): a call the Role does not grant fails the test.
  RenderAccepted  what `sandprobe render` prints, submitted to the real API server as a server-side
                  dry run: every object accepted but the admission probe's bare Pod, which the
                  cluster's ValidatingAdmissionPolicy refuses, as it should.
  HostileCorpus   the hostile output corpus (harness/testing/hostile) through the kubernetes
                  driver: every case keeps its verdict, every format parses.
Traffic rule: every target is inside the cluster's namespaces; EgressWatch sees no packet.
"""
import fcntl
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
from test_cluster_enforce import RealRun

sys.path.insert(0, os.path.join(u.HOME, "harness", "testing", "e2e"))
sys.path.insert(0, os.path.join(u.HOME, "harness", "testing", "hostile"))
from test_hostile_corpus import CorpusCase  # noqa: E402

UP = ("--nodes", "2", "--network-policy", "enforce-on=" + c.NODE)
FIXTURE = None
PRIV_NS = "sandprobe-privileged"
SETTLED = ["minPolicyAge: 10s", "settledRerun: 6s"]
NODE1_COLUMN = re.compile(r"@%s(?![0-9A-Za-z-])" % re.escape(c.NODE))


def setUpModule():
    global FIXTURE
    u.require_sandprobe()
    FIXTURE = c.Fixture.for_module(*UP)


def tearDownModule():
    if FIXTURE:
        FIXTURE.done()


def cluster():
    return FIXTURE.cluster


def privileged_namespace(test_class):
    """A namespace whose Pod Security admits root and writable roots (the sandprobe namespace is
    "restricted"), deleted after the class."""
    cluster().kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": PRIV_NS, "labels": {
            "pod-security.kubernetes.io/enforce": "privileged"}}}))
    test_class.addClassCleanup(cluster().kubectl, "delete", "namespace", PRIV_NS,
                               "--ignore-not-found", "--wait=false", check=False)


def scratch(test, what):
    """A temporary folder for one test, inside the module's fixture folder, removed after it."""
    tmp = tempfile.TemporaryDirectory(prefix="sandprobe-cluster-%s-" % what,
                                      dir=FIXTURE.tmp.name)
    test.addCleanup(tmp.cleanup)
    return tmp.name


def wait_for(what, timeout, fn):
    """Polls fn() every half second until it returns a true value; -> that value."""
    end = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError("timed out after %d s waiting for %s" % (timeout, what))
        time.sleep(0.5)


class TwoNodes(unittest.TestCase):
    def test_two_ready_nodes_each_with_its_own_address(self):
        nodes = {n["metadata"]["name"]: n for n in cluster().get("nodes")["items"]}
        self.assertEqual(sorted(nodes), [c.NODE, c.NODE2])
        addresses = {}
        for name, n in nodes.items():
            ready = [k for k in n["status"]["conditions"] if k["type"] == "Ready"]
            self.assertEqual(ready[0]["status"], "True", (name, ready))
            addresses[name] = [a["address"] for a in n["status"]["addresses"]
                               if a["type"] == "InternalIP"]
        self.assertEqual(addresses, {c.NODE: [c.lib_value("NODE_IP")],
                                     c.NODE2: [c.lib_value("NODE2_IP")]})

    def test_kube_router_runs_on_node_1_only(self):
        pids = "/run/sandprobe-cluster/pids/"
        with open(pids + "kube-router") as f:
            pid = f.read().strip()
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
        self.assertTrue(argv[0].endswith(b"/kube-router"), argv[:2])
        self.assertIn(b"--hostname-override=" + c.NODE.encode(), argv)
        # In node 1's network namespace, the one ci/cluster/up pinned for it.
        self.assertEqual(os.stat("/proc/%s/ns/net" % pid).st_ino,
                         os.stat("/run/netns/" + c.NETNS).st_ino)
        self.assertFalse(os.path.exists(pids + "kube-router-node2"))


class EveryNode(RealRun):
    KUBECONFIG = c.SA_KUBECONFIG  # --nodes lists nodes: rbac-cluster.yaml must grant it
    @classmethod
    def run_args(cls):
        return cls.policy_run("k8s-deny", ["net.dns", "net.tcp-by-ip"], extra=SETTLED,
                              flags=["--nodes", "all"])

    def test_one_column_per_node(self):
        arms = sorted(a["name"] for a in self.report["arms"])
        want = sorted("%s@%s" % (a, n) for a in ("k8s-open", "k8s-deny", "k8s-deny-settled")
                      for n in (c.NODE, c.NODE2))
        self.assertEqual(arms, want, self.res.describe())
        for arm in want:
            for probe in ("net.dns", "net.tcp-by-ip"):
                facts = self.cell(arm, probe)["evidence"]["driver_facts"]
                self.assertEqual(facts["node"], arm.split("@")[1], (arm, probe))

    def test_node_2_reaches_node_1_holds_and_the_banner_names_node_2(self):
        print("\n[EveryNode] %s" % self.report["banners"], file=sys.stderr)
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        for probe in ("net.dns", "net.tcp-by-ip"):
            held = "k8s-deny-settled@" + c.NODE
            self.assertEqual(self.verdict(held, probe)["verdict"], "PASS", self.brief(held, probe))
            for arm in ("k8s-deny@" + c.NODE2, "k8s-deny-settled@" + c.NODE2):
                self.assertEqual(self.verdict(arm, probe)["verdict"], "FAIL",
                                 self.brief(arm, probe))
                self.assertEqual(self.cell(arm, probe)["label"], "REACHED")
                self.assertTrue(self.cell(arm, probe)["evidence"]["canary_hits"], (arm, probe))
        not_enforced = [b for b in self.report["banners"] if b.startswith(rm.BANNER)]
        self.assertEqual(len(not_enforced), 1, self.report["banners"])
        self.assertIn("k8s-deny-settled@" + c.NODE2, not_enforced[0])
        self.assertIsNone(NODE1_COLUMN.search(not_enforced[0]), not_enforced[0])

    def test_nothing_left(self):
        self.assert_nothing_left()


class WritableRoot(RealRun):
    """A root pod with a writable root filesystem, which Pod Security "restricted" (the sandprobe
    namespace) refuses outright: here in a namespace labelled privileged."""

    @classmethod
    def run_args(cls):
        privileged_namespace(cls)
        d = cls.tmp.name
        ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open", namespace=PRIV_NS)
        hardened = rm.write_manifest(os.path.join(d, "hardened.yaml"), "k8s-hardened",
                                     control=ctl, policy=True, timeout=20, namespace=PRIV_NS)
        weak = rm.write_manifest(
            os.path.join(d, "weak.yaml"), "k8s-weak", control=ctl, policy=True,
            namespace=PRIV_NS, job_spec={
                "securityContext": {"runAsNonRoot": False, "runAsUser": 0, "runAsGroup": 0},
                "containers": [{"name": "probe",
                                "securityContext": {"readOnlyRootFilesystem": False}}]})
        suite = u.write_suite(d, "workloads", ["fs.write-root"])
        return ["--suite", suite, "--sandbox", hardened, "--sandbox", weak] + rm.FAST

    def test_writable_root_fails(self):
        self.assertEqual(self.verdict("k8s-weak", "fs.write-root")["verdict"], "FAIL",
                         self.brief("k8s-weak", "fs.write-root"))
        # Held, but the same-driver control is read-only and non-root too: it cannot show that
        # the probe detects a writable root here, so the hardened cell is contained, not a PASS.
        self.assertEqual(self.cell("k8s-hardened", "fs.write-root")["exposure"], "contained")
        self.assertEqual(self.verdict("k8s-hardened", "fs.write-root")["verdict"], "INCONCLUSIVE")
        self.assertEqual(cluster().wait_objects_gone(self.report["run_id"], namespace=PRIV_NS),
                         [])


def start_loops(test, extra_manifest_lines=(), kubeconfig=None):
    """`sandprobe run` of res.cpu-loop (20 s deadline) on k8s-open and k8s-deny, in its own
    session. -> (Popen, out dir, canary dir, deny manifest). Whatever of the run is still on the
    cluster when the test ends (it failed before its own cleanup) is deleted then, so the next test
    finds the cluster as this one did. No traffic row: on this cluster node 2 enforces nothing, so
    a deny pod there leaks, and a FAIL would hide the exit status the test is about."""
    d = scratch(test, "loops")
    # Both loops end by their container's own `timeout 8` at the latest.
    ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open",
                            extra=extra_manifest_lines, timeout=8)
    deny = rm.write_manifest(os.path.join(d, "deny.yaml"), "k8s-deny", control=ctl, policy=True,
                             extra=extra_manifest_lines)
    suite = u.write_suite(d, "loops", ["res.cpu-loop"], params=rm.cluster_params())
    out, canary = os.path.join(d, "out"), os.path.join(d, "canary")
    p = subprocess.Popen(
        [u.BIN, "run", "--suite", suite, "--sandbox", deny, "--out", out, "--canary-dir", canary,
         "--default-timeout", "20", "--grace", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env=dict(os.environ, SANDPROBE_HOME=u.HOME, **cluster().env(kubeconfig)),
        start_new_session=True)
    test.addCleanup(cluster().kubectl, "-n", c.NS, "delete",
                    "jobs,pods,services,networkpolicies", "-l", c.RUN_LABEL,
                    "--ignore-not-found", "--wait=false", check=False)
    test.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
    return p, out, canary, deny


def running_loop_pods(p):
    """-> the run id once both arms' res.cpu-loop pods run, else None."""
    if p.poll() is not None:
        raise AssertionError("sandprobe ended early: %s" % p.communicate()[1][-3000:])
    jobs = cluster().get("-n", c.NS, "jobs", "-l", c.RUN_LABEL)["items"]
    loop_jobs = {j["metadata"]["name"] for j in jobs
                 if (j["metadata"].get("annotations") or {}).get("sandprobe.io/probe")
                 == "res.cpu-loop" and "-preflight" not in j["metadata"]["name"]}
    pods = cluster().get("-n", c.NS, "pods", "-l", c.RUN_LABEL)["items"]
    loops = [q for q in pods if q["status"].get("phase") == "Running"
             and q["metadata"]["labels"].get("job-name") in loop_jobs]
    return len(loops) >= 2 and loops[0]["metadata"]["labels"][c.RUN_LABEL]


class PendingCanary(unittest.TestCase):
    def test_ctrl_c_while_the_canary_is_pending_removes_it(self):
        # The canary's nodeSelector matches no node: it stays Pending, the driver waits for it
        # (podStartTimeout 120 s) and Ctrl-C must end that wait and remove what was created.
        d = scratch(self, "pending")
        m = rm.write_kube_manifest(
            os.path.join(d, "pending-open.yaml"), "k8s-open", extra=[rm.RUNC_JOB],
            canary_template="canaryTemplate: {spec: {runtimeClassName: runc, "
                            "nodeSelector: {no-such: node}}}")
        suite = u.write_suite(d, "pending", ["net.tcp-by-ip"], params=rm.cluster_params())
        p = subprocess.Popen(
            [u.BIN, "run", "--suite", suite, "--sandbox", m, "--out", os.path.join(d, "out"),
             "--canary-dir", os.path.join(d, "canary")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=dict(os.environ, SANDPROBE_HOME=u.HOME, **cluster().env()))
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))

        def pending_canary():
            if p.poll() is not None:
                raise AssertionError("sandprobe ended early: %s" % p.communicate()[1][-3000:])
            pods = cluster().get("-n", c.NS, "pods", "-l", "sandprobe.io/role=canary")["items"]
            pods = [q for q in pods if q["status"].get("phase") == "Pending"]
            return pods and pods[0]["metadata"]["labels"][c.RUN_LABEL]
        run_id = wait_for("the pending canary Pod", 60, pending_canary)
        time.sleep(1)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        self.assertLess(time.monotonic() - t0, 20, "Ctrl-C did not end the canary's wait")
        err = err.decode("utf-8", "replace")
        self.assertIn("interrupted before any probe ran", err)
        self.assertEqual(p.returncode, 2, err[-3000:])
        self.assertFalse(os.path.exists(os.path.join(d, "out", "report.json")))
        self.assertEqual(cluster().wait_objects_gone(run_id), [])


class HungApiServer(unittest.TestCase):
    def test_error_cells_exit_2_then_cleanup_removes_what_was_left(self):
        p, out, canary, deny = start_loops(self, ["apiTimeout: 2s", "podStartTimeout: 20s"])
        run_id = wait_for("two running res.cpu-loop pods", 120, lambda: running_loop_pods(p))
        t0 = time.monotonic()
        with cluster().apiserver_stopped():  # every API request hangs from now on
            try:
                _, err = p.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                raise AssertionError("sandprobe hung on a stopped API server")
        err = err.decode("utf-8", "replace")
        wall = time.monotonic() - t0
        self.assertEqual(p.returncode, 2, err[-3000:])
        self.assertLess(wall, 75, "a stopped API server must not hold the run")
        report = u.load_report(out)
        self.assertFalse(report["interrupted"])
        loop = u.verdicts(report, "k8s-deny")["res.cpu-loop"]
        self.assertEqual(loop["verdict"], "ERROR", loop)
        self.assertIn("API server does not answer", err)
        # It answers again: what the run could not delete is still there, labelled, and
        # `sandprobe cleanup --kubernetes` removes it (the run is over: its lock is free).
        left = cluster().objects_of_run(run_id)
        self.assertTrue(any(o.startswith("job/") for o in left), left)
        self.assertTrue(any(o.startswith("networkpolicy/") for o in left), left)
        res = u.run_sandprobe(
            ["cleanup", "--canary-dir", canary, "--tmp", os.path.dirname(out),
             "--kubernetes", deny], timeout=120,
            env=cluster().env(DOCKER_HOST="unix://%s/no-docker.sock" % os.path.dirname(out)))
        self.assertEqual(res.returncode, 0, res.describe())
        for o in left:
            if not o.startswith("pod/"):  # a Job's pods go with it (background propagation)
                self.assertIn(o.split("/", 1)[1], res.stdout)
        self.assertIn("(run %s)" % run_id, res.stdout)
        self.assertEqual(cluster().wait_objects_gone(run_id), [])


class CleanupCommand(unittest.TestCase):
    """Planted objects; every sweep as the least-privileged ServiceAccount."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-cluster-clean-",
                                               dir=FIXTURE.tmp.name)
        self.addCleanup(self.tmp.cleanup)
        self.planted = []
        self.addCleanup(self.remove_planted)

    def remove_planted(self):
        for run in self.planted:
            cluster().kubectl("-n", c.NS, "delete", "jobs,networkpolicies,services,pods", "-l",
                              "%s=%s" % (c.RUN_LABEL, run), "--ignore-not-found", "--wait=false",
                              check=False)

    def plant(self, run, folder=None):
        """A Job (+ its pod), a NetworkPolicy and a Service labelled as run `run`'s; with
        `folder`, annotated with it as the driver annotates its objects (sandprobe.io/run-folder)."""
        self.planted.append(run)
        labels = {c.RUN_LABEL: run, "sandprobe.io/arm": "planted"}
        notes = {"sandprobe.io/run-folder": folder} if folder else {}
        restricted = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "%s-job" % run, "namespace": c.NS, "labels": labels,
                            "annotations": notes},
               "spec": {"backoffLimit": 0, "template": {
                   "metadata": {"labels": labels, "annotations": notes},
                   "spec": {"restartPolicy": "Never", "runtimeClassName": "runc",
                            "terminationGracePeriodSeconds": 0,
                            "automountServiceAccountToken": False,
                            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534,
                                                "seccompProfile": {"type": "RuntimeDefault"}},
                            "containers": [{"name": "probe", "image": rm.IMAGE,
                                            "imagePullPolicy": "Never",
                                            "command": ["sleep", "120"],
                                            "securityContext": restricted}]}}}}
        pol = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "%s-policy" % run, "namespace": c.NS, "labels": labels,
                            "annotations": notes},
               "spec": {"podSelector": {"matchLabels": labels}, "policyTypes": ["Egress"],
                        "egress": []}}
        svc = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "%s-svc" % run, "namespace": c.NS, "labels": labels,
                            "annotations": notes},
               "spec": {"selector": labels, "ports": [{"port": 80, "protocol": "TCP"}]}}
        cluster().kubectl("apply", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": [job, pol, svc]}))
        wait_for("the planted Job's pod", 60,
                 lambda: any(o.startswith("pod/") for o in cluster().objects_of_run(run)))

    def sweep(self, *extra, canary=None):
        d = self.tmp.name
        manifest = rm.write_manifest(os.path.join(d, "m.yaml"), "k8s-open")
        args = ["cleanup", "--canary-dir", canary or os.path.join(d, "canary"), "--tmp", d,
                "--kubernetes", manifest] + list(extra)
        return u.run_sandprobe(args, timeout=120, env=cluster().env(
            c.SA_KUBECONFIG, DOCKER_HOST="unix://%s/no-docker.sock" % d))

    def test_removes_dead_runs_objects_and_spares_a_live_run(self):
        d = self.tmp.name
        for run in ("sp-dead-run", "sp-live-run"):
            self.plant(run)
        dead = cluster().objects_of_run("sp-dead-run")
        self.assertEqual([o.split("/")[0] for o in dead],
                         ["job", "networkpolicy", "pod", "service"])
        # A live run holds the flock on <canary dir>/<run id>/.lock.
        canary = os.path.join(d, "canary")
        os.makedirs(os.path.join(canary, "sp-live-run"))
        with open(os.path.join(canary, "sp-live-run", ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            dry = self.sweep("--dry-run")
            self.assertEqual(dry.returncode, 0, dry.describe())
            self.assertIn("would remove kubernetes", dry.stdout)
            self.assertIn("(run sp-dead-run)", dry.stdout)
            self.assertEqual(cluster().objects_of_run("sp-dead-run"), dead)
            res = self.sweep()
        self.assertEqual(res.returncode, 0, res.describe())
        for o in dead:
            if not o.startswith("pod/"):
                self.assertIn(o.split("/", 1)[1], res.stdout)
        self.assertIn("object(s) of a running sandprobe (run sp-live-run), left alone",
                      res.stdout)
        self.assertEqual(cluster().wait_objects_gone("sp-dead-run"), [])
        self.assertEqual(len(cluster().objects_of_run("sp-live-run")), 4)
        # The lock is released: the next cleanup takes the live run's objects too.
        res = self.sweep()
        self.assertEqual(res.returncode, 0, res.describe())
        self.assertEqual(cluster().wait_objects_gone("sp-live-run"), [])
        self.assertNotIn("forbidden", (res.stdout + res.stderr).lower())

    def test_a_live_run_with_another_canary_dir_is_spared_by_its_folder(self):
        # The run's objects name its canary folder (annotation sandprobe.io/run-folder, set by
        # the driver): a cleanup with another --canary-dir (another HOME) still sees that the
        # run is alive while that folder's lock is held, and leaves its objects alone.
        elsewhere = os.path.join(self.tmp.name, "other-home", "canary", "sp-far-run")
        os.makedirs(elsewhere)
        self.plant("sp-far-run", folder=elsewhere)
        self.assertEqual(len(cluster().objects_of_run("sp-far-run")), 4)
        with open(os.path.join(elsewhere, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            res = self.sweep()
        self.assertEqual(res.returncode, 0, res.describe())
        self.assertIn("object(s) of a running sandprobe (run sp-far-run), left alone",
                      res.stdout)
        self.assertEqual(len(cluster().objects_of_run("sp-far-run")), 4)
        res = self.sweep()  # the lock is free: the run is over
        self.assertEqual(res.returncode, 0, res.describe())
        self.assertEqual(cluster().wait_objects_gone("sp-far-run"), [])

    def test_run_keeps_the_sweep_to_one_run(self):
        # `cleanup --run`: a cluster other people's runs share; their objects are not looked at.
        for run in ("sp-one-run", "sp-other-run"):
            self.plant(run)
        other = cluster().objects_of_run("sp-other-run")
        res = self.sweep("--run", "sp-one-run")
        self.assertEqual(res.returncode, 0, res.describe())
        self.assertEqual(cluster().wait_objects_gone("sp-one-run"), [])
        self.assertEqual(cluster().objects_of_run("sp-other-run"), other)
        self.assertNotIn("sp-other-run", res.stdout)

    def test_a_stopped_api_server_is_an_error_that_prints_no_token(self):
        m = rm.write_manifest(os.path.join(self.tmp.name, "m1.yaml"), "k8s-open",
                              extra=["apiTimeout: 1s"])
        with open(c.SA_KUBECONFIG) as f:
            token = re.search(r"token:\s*(\S+)", f.read()).group(1)
        with cluster().apiserver_stopped():
            res = u.run_sandprobe(
                ["cleanup", "--canary-dir", self.tmp.name, "--tmp", self.tmp.name,
                 "--kubernetes", m], timeout=60,
                env=cluster().env(c.SA_KUBECONFIG,
                                  DOCKER_HOST="unix://%s/x.sock" % self.tmp.name))
        self.assertEqual(res.returncode, 1, res.describe())
        self.assertIn("kubernetes error", res.stdout)
        self.assertNotIn(token, res.stdout + res.stderr)


class RenderAccepted(unittest.TestCase):
    def test_the_real_api_server_accepts_what_render_prints(self):
        d = scratch(self, "render")
        deny = rm.copy_shipped(rm.DENY, os.path.join(d, "deny-egress.yaml"),
                               control=rm.copy_shipped(rm.OPEN, os.path.join(d, "open.yaml")))
        res = u.run_sandprobe(["render", "--sandbox", deny, "--suite", rm.egress_suite(d)],
                              timeout=60)
        self.assertEqual(res.returncode, 0, res.describe())
        # One YAML document an object, after a comment line naming the arm.
        docs = [x for x in res.stdout.split("\n---\n") if re.search(r"(?m)^kind: ", x)]
        kinds = [re.search(r"(?m)^kind: (\S+)", x).group(1) for x in docs]
        self.assertEqual(kinds.count("Job"), 14, kinds)
        # Each object alone, as a server-side dry run: the API server's validation, defaulting
        # and admission (Pod Security "restricted", the runtimeClassName policy, quota), stored
        # nowhere.
        refused = {}
        for text, kind in zip(docs, kinds):
            r = cluster().kubectl("create", "--dry-run=server", "-o", "name", "-f", "-",
                                  input=text, check=False)
            if r.returncode != 0:
                probe = re.search(r"sandprobe\.io/probe: (\S+)", text)
                refused["%s %s" % (kind, probe.group(1) if probe else "")] = r.stderr.strip()
        # platform.runtime-class submits a bare Pod without runtimeClassName: the probe's question
        # is whether admission refuses it, and this cluster's policy does.
        self.assertEqual(sorted(refused), ["Pod platform.runtime-class"], refused)
        self.assertIn("sandprobe-require-runtime-class", refused["Pod platform.runtime-class"])


class HostileCorpus(CorpusCase):
    DRIVERS = ("kubernetes",)

    @classmethod
    def setUpClass(cls):
        os.environ["SANDPROBE_CLUSTER_KUBECONFIG"] = cluster().kubeconfig
        try:
            super().setUpClass()
        finally:
            del os.environ["SANDPROBE_CLUSTER_KUBECONFIG"]

    def test_every_case_keeps_the_verdict_and_every_format_parses(self):
        self.check_driver("kubernetes")


if __name__ == "__main__":
    unittest.main()
