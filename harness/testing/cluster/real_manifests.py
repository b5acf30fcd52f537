"""Manifests and suites for the real cluster (ci/cluster): the shipped ones with only what this
cluster needs changed, said here once.

- image: the probe image imported into the node's containerd (ci/cluster/images), never pulled;
- runtimeClassName: runc on the Job's pods and on the in-cluster canary, because the cluster's
  ValidatingAdmissionPolicy refuses pods without one in the sandprobe namespace (as the ticket's
  hardened cluster does);
- the suite's net.metadata target: the run's in-cluster canary instead of 169.254.169.254 (traffic
  rule: nothing in a test aims outside the cluster's namespace).
"""
import json
import os
import sys

from cluster_util import u

sys.path.insert(0, os.path.join(u.HOME, "harness", "testing", "e2e"))
sys.path.insert(0, os.path.join(u.HOME, "harness", "testing", "fake_kube"))
import test_kubernetes as tk  # noqa: E402  (its manifest writers, shared with the fake's tests)

KUBE = os.path.join(u.MANIFESTS, "kubernetes")
OPEN = os.path.join(KUBE, "open.yaml")
DENY = os.path.join(KUBE, "deny-egress.yaml")
GVISOR = os.path.join(KUBE, "gvisor.yaml")
EGRESS_SUITE = os.path.join(u.HOME, "suites", "kubernetes-egress.yaml")
RUNC_JOB = "jobTemplate: {spec: {template: {spec: {runtimeClassName: runc}}}}"
TRAFFIC_ROWS = tk.TRAFFIC_ROWS
CLOUD_ROWS = tk.CLOUD_ROWS
BANNER = tk.BANNER
LATE = tk.LATE
FAST = ["--default-timeout", "8", "--grace", "4"]


def copy_shipped(src, dst, control=None, drop=(), add=()):
    """A shipped kubernetes manifest with the probe image, runtimeClassName runc on the Job's pods
    (unless `add` brings a jobTemplate of its own) and on the canary."""
    extra = list(add)
    if not any(a.startswith("jobTemplate:") for a in extra):
        extra.append(RUNC_JOB)
    with open(src) as f:
        if "jobTemplate:" in f.read():
            extra = [a for a in extra if a != RUNC_JOB]  # the file's own template (gvisor.yaml)
    return tk.copy_manifest(src, dst, control=control, drop=drop, add=extra)


def write_manifest(path, name, control=None, policy=False, extra=(), timeout=None, limits=None,
                   job_spec=None, job=None, namespace=None):
    """A kubernetes manifest for this cluster (test_kubernetes.write_kube_manifest) whose Job pod
    spec is `job_spec` (a dict merged over {runtimeClassName: runc}), whose Job spec carries the
    fields of `job` (e.g. activeDeadlineSeconds), in `namespace` (default sandprobe)."""
    spec = {"runtimeClassName": "runc"}
    spec.update(job_spec or {})
    job_template = {"spec": dict(job or {}, template={"spec": spec})}
    lines = ["jobTemplate: %s" % json.dumps(job_template)]
    tk.write_kube_manifest(path, name, control=control, policy=policy,
                           extra=lines + list(extra), timeout=timeout, limits=limits)
    if namespace:
        with open(path) as f:
            text = f.read()
        default = "  namespace: %s\n" % tk.NS
        if text.count(default) != 1:
            raise AssertionError("%s: expected one %r" % (path, default))
        with open(path, "w") as f:
            f.write(text.replace(default, "  namespace: %s\n" % namespace))
    return path


def egress_suite(directory):
    """suites/kubernetes-egress.yaml with net.metadata aimed at the in-cluster canary."""
    with open(EGRESS_SUITE) as f:
        text = f.read()
    shipped = 'params: {target: "169.254.169.254:80"}'
    if text.count(shipped) != 1:
        raise AssertionError("%s: expected one net.metadata target %s" % (EGRESS_SUITE, shipped))
    path = os.path.join(directory, "kubernetes-egress.yaml")
    with open(path, "w") as f:
        f.write(text.replace(shipped, 'params: {target: "{canary.cluster.http}"}'))
    return path


def shipped_egress_run(directory, deny_add=()):
    """Run args: the egress suite against the shipped deny-egress manifest and its control."""
    ctl = copy_shipped(OPEN, os.path.join(directory, "open.yaml"))
    deny = copy_shipped(DENY, os.path.join(directory, "deny-egress.yaml"), control=ctl,
                        drop=("minPolicyAge",) if deny_add else (), add=deny_add)
    return ["--suite", egress_suite(directory), "--sandbox", deny] + FAST


cluster_params = tk.cluster_params
