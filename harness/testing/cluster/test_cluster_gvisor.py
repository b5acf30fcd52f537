"""Real cluster with gVisor as a RuntimeClass (ci/cluster/up --runtime-class gvisor: runsc and its
containerd shim built from gVisor's module, the node on a containerd 2 built from its own; see
docs/cluster.md "gVisor as a RuntimeClass"), NetworkPolicy enforced by kube-router.

  RuntimeClassWired  the node's own facts, not a probe's word: a pod with runtimeClassName gvisor
                     is a container containerd runs with io.containerd.runsc.v1, and its
                     /proc/version is not the host's.
  ShippedGvisor      manifests/kubernetes/gvisor.yaml (runtimeClassName gvisor, deny-all egress)
                     against a runc control: its own kernel, OOMKilled at its memory limit, a pod
                     without runtimeClassName refused, egress held once kube-router has programmed
                     the pod (a fresh pod's leak is "enforced late", as under runc).
Traffic rule: every target is inside the cluster's namespace; EgressWatch sees no packet.
"""
import json
import os
import subprocess
import time
import unittest

import cluster_util as c
from cluster_util import u
import real_manifests as rm
import test_cluster_enforce as enforce
from test_cluster_enforce import RealRun

GVISOR_ARM = "k8s-gvisor"
SETTLED_ARM = GVISOR_ARM + "-settled"
TRAFFIC = ["net.dns", "net.tcp-by-ip", "net.http-by-name"]
RUNSC_SHIM = "io.containerd.runsc.v1"


def setUpModule():
    enforce.setUpModule("--runtime-class", "gvisor")


def node_ctr(*args):
    """ctr of the node's containerd (the containerd 2 that `up --runtime-class gvisor` starts),
    run inside the cluster's network and mount namespaces as `up` runs it."""
    gvisor = subprocess.run([os.path.join(c.CLUSTER, "build-gvisor")], capture_output=True,
                            text=True, check=True, timeout=600).stdout.strip()
    sock = c.lib_value("CONTAINERD_SOCK")
    res = subprocess.run(["nsenter", "--net=/run/netns/" + c.NETNS,
                          "--mount=" + c.lib_value("CLUSTER_MNTNS"), "--",
                          os.path.join(gvisor, "ctr"), "--address", sock, "-n", "k8s.io"]
                         + list(args), capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise AssertionError("ctr %s: %s" % (" ".join(args), res.stderr[-2000:]))
    return res.stdout


# A pod Pod Security "restricted" admits, under gVisor, that prints its kernel and waits.
PROOF_POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "gvisor-proof", "namespace": c.NS},
    "spec": {
        "runtimeClassName": "gvisor", "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,  # python as PID 1 ignores SIGTERM: no 30 s wait
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "proof", "image": rm.IMAGE, "imagePullPolicy": "Never",
            "command": ["python3", "-c", "import time; print(open('/proc/version').read()"
                        ".strip(), flush=True); time.sleep(120)"],
            "securityContext": {"allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}}}]}}


class RuntimeClassWired(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        k = enforce.CLUSTER
        k.kubectl("apply", "-f", "-", input=json.dumps(PROOF_POD))
        try:
            k.kubectl("-n", c.NS, "wait", "--for=condition=Ready", "pod/gvisor-proof",
                      "--timeout=120s", timeout=150)
            # Ready means started; the first line comes once python has run under gVisor.
            cls.version = ""
            end = time.monotonic() + 60
            while "Linux version" not in cls.version and time.monotonic() < end:
                cls.version = k.kubectl("-n", c.NS, "logs", "gvisor-proof").stdout.strip()
                time.sleep(0.5)
            pod = k.get("-n", c.NS, "pod/gvisor-proof")
            cid = pod["status"]["containerStatuses"][0]["containerID"]
            cls.container_id = cid.split("://", 1)[1]
            cls.info = json.loads(node_ctr("containers", "info", cls.container_id))
        finally:
            k.kubectl("-n", c.NS, "delete", "pod", "gvisor-proof", "--wait=true",
                      "--timeout=90s", check=False, timeout=120)

    def test_containerd_runs_the_pod_with_the_runsc_shim(self):
        self.assertEqual(self.info["Runtime"]["Name"], RUNSC_SHIM, self.info["Runtime"])

    def test_the_pod_sees_another_kernel_than_the_host(self):
        with open("/proc/version") as f:
            host = f.read().strip()
        self.assertTrue(self.version.startswith("Linux version "), self.version)
        self.assertNotEqual(self.version, host)
        self.assertNotIn(os.uname().release, self.version)


class ShippedGvisor(enforce.LateOrHeld, RealRun):
    @classmethod
    def run_args(cls):
        d = cls.tmp.name
        ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open")
        gvisor = rm.copy_shipped(rm.GVISOR, os.path.join(d, "gvisor.yaml"), control=ctl,
                                 add=enforce.SETTLED)
        rows = ["kernel.boundary", "res.memory-balloon", "platform.runtime-class"] + TRAFFIC
        suite = u.write_suite(d, "suite-gvisor", rows, params=rm.cluster_params())
        return ["--suite", suite, "--sandbox", gvisor] + rm.FAST

    def test_its_own_kernel(self):
        self.assertEqual(self.cell("k8s-open", "kernel.boundary")["exposure"], "exposed")
        v = self.verdict(GVISOR_ARM, "kernel.boundary")
        self.assertEqual((v["verdict"], v["validated_by"]), ("PASS", "k8s-open"), v)

    def test_memory_limit_is_oom_killed(self):
        balloon = self.cell(GVISOR_ARM, "res.memory-balloon")
        self.assertIs(balloon["evidence"]["driver_facts"].get("oom_killed"), True, balloon)
        self.assertEqual(self.verdict(GVISOR_ARM, "res.memory-balloon")["verdict"], "PASS")

    def test_a_pod_without_runtime_class_is_refused(self):
        # The namespace's admission policy, not gVisor, refuses it: the row must still PASS on a
        # gVisor arm, whose own pods carry runtimeClassName gvisor.
        self.assertEqual(self.verdict(GVISOR_ARM, "platform.runtime-class")["verdict"], "PASS")

    def test_egress_held_once_programmed_a_fresh_leak_is_late(self):
        self.assert_held_once_programmed_and_a_leak_is_late(TRAFFIC, GVISOR_ARM, SETTLED_ARM)

    def test_nothing_left(self):
        self.assert_nothing_left()


def runsc_processes():
    """Processes running this cluster's gVisor binaries (runsc's sandbox and gofer re-exec runsc;
    the shim): only those under the cluster cache's gvisor-* folder, not another runsc on the
    host (Docker's)."""
    gvisor = os.path.join(c.lib_value("CLUSTER_CACHE"), "gvisor-")
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            exe = os.readlink("/proc/%s/exe" % pid)
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if exe.startswith(gvisor) and os.path.basename(exe) in (
                "runsc", "containerd-shim-runsc-v1"):
            found.append("%s %s" % (pid, args))
    return found


def tearDownModule():
    """No gVisor sandbox, gofer or shim outlives its pod (waited for up to 30 s after the runs);
    then ci/cluster/down, which checks everything else."""
    left = runsc_processes()
    for _ in range(30):
        if not left:
            break
        time.sleep(1)
        left = runsc_processes()
    problems = ["gVisor processes outlived their pods: %s" % left] if left else []
    try:
        enforce.tearDownModule()
    except AssertionError as e:
        problems.append(str(e))
    if problems:
        raise AssertionError("\n".join(problems))


if __name__ == "__main__":
    unittest.main()
