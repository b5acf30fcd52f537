"""Real cluster, NetworkPolicy enforced (ci/cluster/up --network-policy enforce): the kubelet's
and the admission's own facts, each class one `sandprobe run`.

  Workloads   OOMKilled for a memory limit; the Job's DeadlineExceeded (activeDeadlineSeconds);
              a disk-backed emptyDir's sizeLimit does not stop a write (the fake evicted at once),
              a memory-backed one refuses (ENOSPC); a mounted token FAILs with its hash prefix
              only.
  Privileged  Pod Security's own refusal of a privileged template, in its own words.
  ApiServerKilled  kube-apiserver SIGKILLed while the loops run: the run ends, no PASS on what it
              could not watch, what it could not delete named; the API server is started again.

Once, an arm's preflight pod ended "exit 137, the container could not be located": that was the
first arm's preflight pod, still being deleted, listed by the second arm's same-named preflight
Job (docs/cluster.md "Where the fake was wrong"); each arm's preflight now has its own name.
"""
import json
import os
import subprocess
import sys
import time
import unittest

import cluster_util as c
from cluster_util import u
import real_manifests as rm
import test_cluster_enforce as enforce
from test_cluster_enforce import RealRun, setUpModule, tearDownModule  # noqa: F401 (the module's cluster)


class Workloads(RealRun):
    @classmethod
    def run_args(cls):
        d = cls.tmp.name
        ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open")
        hardened = rm.write_manifest(os.path.join(d, "hardened.yaml"), "k8s-hardened",
                                     control=ctl, policy=True, timeout=20,
                                     limits={"memory": "128Mi", "tmp": "16Mi"})
        weak = rm.write_manifest(
            os.path.join(d, "weak.yaml"), "k8s-weak", control=ctl, policy=True,
            limits={"memory": "128Mi", "tmp": "16Mi"},
            job_spec={"automountServiceAccountToken": True,
                      "volumes": [{"name": "tmp", "emptyDir": {"medium": "Memory",
                                                               "sizeLimit": "16Mi"}}]})
        # activeDeadlineSeconds shorter than the container's own timeout: the Job controller
        # ends the loop (DeadlineExceeded), not `timeout`.
        deadline = rm.write_manifest(os.path.join(d, "deadline.yaml"), "k8s-deadline",
                                     control=ctl, policy=True, timeout=30,
                                     job={"activeDeadlineSeconds": 4})
        suite = u.write_suite(d, "workloads", ["res.memory-balloon", "fs.fill-tmp",
                                               "cred.sa-token", "res.cpu-loop"],
                              params={"fs.fill-tmp": {"hold_s": 2}, "cred.sa-token": {}})
        return ["--suite", suite, "--sandbox", hardened, "--sandbox", weak, "--sandbox",
                deadline] + rm.FAST

    def test_memory_limit_is_oom_killed(self):
        balloon = self.cell("k8s-hardened", "res.memory-balloon")
        self.assertIs(balloon["evidence"]["driver_facts"].get("oom_killed"), True, balloon)
        self.assertEqual(self.verdict("k8s-hardened", "res.memory-balloon")["verdict"], "PASS")

    def test_emptydir_size_limit_does_not_stop_a_write_and_a_tmpfs_refuses(self):
        # A disk-backed emptyDir's sizeLimit is enforced by the kubelet's eviction manager, on
        # volume stats it gathers every minute: a probe that writes 32 MiB into a 16 MiB limit and
        # ends in seconds is never evicted. Measured here; the fake evicted at once.
        fill = self.cell("k8s-hardened", "fs.fill-tmp")
        self.assertEqual(self.verdict("k8s-hardened", "fs.fill-tmp")["verdict"], "FAIL", fill)
        self.assertNotEqual(fill["evidence"]["driver_facts"].get("evicted"), True, fill)
        tmpfs = self.cell("k8s-weak", "fs.fill-tmp")
        self.assertEqual(tmpfs["evidence"]["result"]["errno"], "ENOSPC", tmpfs)

    def test_active_deadline_is_deadline_exceeded(self):
        # The Job controller stops the pod (SIGTERM, exit 143) long before the container's own
        # timeout; the Job's condition, read after the pod ended, says who did it.
        loop = self.cell("k8s-deadline", "res.cpu-loop")
        self.assertLess(loop["evidence"]["duration_s"], 15, loop)
        self.assertEqual(loop["evidence"]["driver_facts"].get("job_condition"), "DeadlineExceeded",
                         loop)
        self.assertEqual(self.verdict("k8s-deadline", "res.cpu-loop")["verdict"], "PASS")

    def test_mounted_token_fails_with_hash_prefix_only(self):
        self.assertEqual(self.verdict("k8s-weak", "cred.sa-token")["verdict"], "FAIL")
        result = self.cell("k8s-weak", "cred.sa-token")["evidence"]["result"]
        text = json.dumps(result)
        self.assertRegex(text, r"[0-9a-f]{12}")
        self.assertNotIn("eyJ", text)  # a JWT's first bytes: the value never reaches the report
        with open(os.path.join(self.out, "report.json")) as f:
            self.assertNotIn("eyJ", f.read())
        self.assertEqual(self.cell("k8s-hardened", "cred.sa-token")["exposure"], "contained")

    def test_nothing_left(self):
        self.assert_nothing_left()


class Privileged(RealRun):
    """A privileged jobTemplate in the restricted namespace: the real API server admits the Job
    and Pod Security refuses its pod (FailedCreate), so the arm's preflight cannot run a probe
    and the run stops before any row, naming Pod Security's own words. (With
    allowPrivilegeEscalation false the API server refuses the Job itself, 422, before Pod
    Security is asked.)"""

    @classmethod
    def run_args(cls):
        d = cls.tmp.name
        ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open")
        privileged = rm.write_manifest(
            os.path.join(d, "privileged.yaml"), "k8s-privileged", control=ctl, policy=True,
            job_spec={"containers": [{"name": "probe",
                                      "securityContext": {"privileged": True,
                                                          "allowPrivilegeEscalation": True}}]})
        suite = u.write_suite(d, "suite-privileged", ["net.tcp-by-ip"], params=rm.cluster_params())
        return ["--suite", suite, "--sandbox", privileged] + rm.FAST

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # No report (the run stopped at setup), so no run id: any object of any run is left.
        end = time.monotonic() + 60
        while True:
            items = enforce.CLUSTER.get("-n", c.NS, "jobs,pods,services,networkpolicies",
                                "-l", c.RUN_LABEL)["items"]
            cls.left = sorted("%s/%s" % (i["kind"].lower(), i["metadata"]["name"])
                              for i in items)
            if not cls.left or time.monotonic() > end:
                break
            time.sleep(1)

    def setUp(self):
        pass  # no report.json: the run stops at setup

    def test_refused_by_pod_security_in_its_own_words(self):
        # The arm's preflight meets the refusal: a setup error, exit 3, no report. (Runs that
        # went on to ERROR cells were the preflight's same-named Job taking the control's pod as
        # its own, docs/cluster.md "Where the fake was wrong"; each preflight is named apart now.)
        words = 'violates PodSecurity "restricted:latest": privileged'
        self.assertIsNone(self.report)
        self.assertEqual(self.res.returncode, 3, self.res.describe())
        self.assertIn("k8s-privileged", self.res.stderr)
        self.assertIn("could not run a trivial probe", self.res.stderr)
        self.assertIn(words, self.res.stderr)

    def test_nothing_left(self):
        self.assert_nothing_left()



class ApiServerKilled(unittest.TestCase):
    """kube-apiserver killed (SIGKILL) while both arms' res.cpu-loop pods run: the run ends on
    its own, writes its report, gives no PASS on what it could not watch, and names what it could
    not delete; once the API server is back, the run's objects are found where it said."""

    def test_run_ends_measures_no_pass_and_names_what_it_left(self):
        cluster = enforce.CLUSTER
        p, out, deny, run_id = enforce.start_two_loops(self, "sandprobe-cluster-kill-",
                                                       ["--no-color"])
        cluster.kill_apiserver()
        try:
            out_text, err = p.communicate(timeout=240)
        finally:
            cluster.restart_apiserver()
        out_text = out_text.decode("utf-8", "replace")
        err = err.decode("utf-8", "replace")
        print("\n[ApiServerKilled] exit %d\n%s\n%s" % (p.returncode, out_text, err[-3000:]),
              file=sys.stderr)
        self.assertEqual(p.returncode, 2, err[-3000:])
        report = u.load_report(out)
        self.assertEqual(report["run_id"], run_id)
        for arm in ("k8s-open", "k8s-deny"):
            cell = [o for o in report["observations"]
                    if o["arm"] == arm and o["probe"] == "res.cpu-loop"]
            self.assertEqual(len(cell), 1, arm)
        v = u.verdicts(report, "k8s-deny")["res.cpu-loop"]
        self.assertNotEqual(v["verdict"], "PASS", v)
        left = cluster.wait_objects_gone(run_id, timeout=5)
        if left:
            # Said where a user sees it, with the remedy: the command below.
            self.assertIn("the API server does not answer", err)
            self.assertIn(run_id, err)
            self.assertIn("`sandprobe cleanup --kubernetes %s --run %s`" % (deny, run_id), err)
        print("[ApiServerKilled] left: %s" % left, file=sys.stderr)
        # The product's own remedy, now that the API server is back.
        res = subprocess.run([u.BIN, "cleanup", "--kubernetes", deny, "--run", run_id,
                              "--canary-dir", os.path.join(os.path.dirname(out), "canary")],
                             capture_output=True, text=True, timeout=180,
                             env=dict(os.environ, SANDPROBE_HOME=u.HOME, **cluster.env()))
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertEqual(cluster.wait_objects_gone(run_id), [])


if __name__ == "__main__":
    unittest.main()
