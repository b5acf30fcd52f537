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

from cluster_util import u

KUBE = os.path.join(u.MANIFESTS, "kubernetes")
OPEN = os.path.join(KUBE, "open.yaml")
DENY = os.path.join(KUBE, "deny-egress.yaml")
GVISOR = os.path.join(KUBE, "gvisor.yaml")
EGRESS_SUITE = os.path.join(u.HOME, "suites", "kubernetes-egress.yaml")
NS = "sandprobe"
IMAGE = "sandprobe-probe:local"  # built offline by ci/images/probe-image; imported, never pulled
RUNC_JOB = "jobTemplate: {spec: {template: {spec: {runtimeClassName: runc}}}}"
# The cluster's ValidatingAdmissionPolicy refuses pods without runtimeClassName in the sandprobe
# namespace; the in-cluster canary is a bare pod.
CANARY_TEMPLATE = "canaryTemplate: {spec: {runtimeClassName: runc}}"
# Traffic rows of the egress suite (judged on policy arms), the metadata row aimed at the
# in-cluster canary, the cloud metadata shapes, and the credential row.
TRAFFIC_ROWS = ["net.dns", "net.http-by-name", "net.tcp-by-ip", "net.udp", "net.k8s-api"]
METADATA = "net.metadata"
CLOUD_ROWS = ["net.metadata-imdsv2", "net.metadata-gcp", "net.metadata-azure"]
CLOUD_CRED = "cred.cloud-metadata"
HELD_OPEN = "net.held-open"  # kubernetes-egress.yaml's held-open flows (TCP and UDP)
NODE_LOCAL = "net.node-local"  # and the node's own addresses
BANNER = "NetworkPolicy is accepted but not enforced on this cluster"
LATE = "NetworkPolicy is enforced late for new pods"
FAST = ["--default-timeout", "8", "--grace", "4"]


def cluster_params(**rows):
    """Suite params for the egress rows, aimed at the in-cluster canary."""
    base = {"net.dns": {"server": "{canary.cluster.dns}"},
            "net.http-by-name": {"url": "http://{canary.cluster.name}/"},
            "net.tcp-by-ip": {"target": "{canary.cluster.tcp}"},
            "net.udp": {"target": "{canary.cluster.udp}"},
            "net.k8s-api": {"target": "kubernetes.default.svc:443", "scheme": "https"}}
    base.update(rows)
    return base


def copy_manifest(src, dst, control=None, drop=(), add=()):
    """A copy of a shipped kubernetes manifest: its image replaced by the probe image built here,
    `control:` made absolute, kubernetes-section lines whose key is in `drop` removed, `add` lines
    (and the canary template) appended to the kubernetes: section (the last one)."""
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


def copy_shipped(src, dst, control=None, drop=(), add=()):
    """A shipped kubernetes manifest with the probe image, runtimeClassName runc on the Job's pods
    (unless `add` brings a jobTemplate of its own) and on the canary."""
    extra = list(add)
    if not any(a.startswith("jobTemplate:") for a in extra):
        extra.append(RUNC_JOB)
    with open(src) as f:
        if "jobTemplate:" in f.read():
            extra = [a for a in extra if a != RUNC_JOB]  # the file's own template (gvisor.yaml)
    return copy_manifest(src, dst, control=control, drop=drop, add=extra)


def write_manifest(path, name, control=None, policy=False, extra=(), timeout=None, limits=None,
                   job_spec=None, job=None, namespace=None):
    """A kubernetes manifest for this cluster (write_kube_manifest) whose Job pod
    spec is `job_spec` (a dict merged over {runtimeClassName: runc}), whose Job spec carries the
    fields of `job` (e.g. activeDeadlineSeconds), in `namespace` (default sandprobe)."""
    spec = {"runtimeClassName": "runc"}
    spec.update(job_spec or {})
    job_template = {"spec": dict(job or {}, template={"spec": spec})}
    lines = ["jobTemplate: %s" % json.dumps(job_template)]
    write_kube_manifest(path, name, control=control, policy=policy,
                        extra=lines + list(extra), timeout=timeout, limits=limits)
    if namespace:
        with open(path) as f:
            text = f.read()
        default = "  namespace: %s\n" % NS
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

