"""The policy-fields table's bed (docs/probes.md, "net.policy-*"): two echo peers in the sandprobe
namespace, one allow-list NetworkPolicy whose rules each admit exactly one thing through one field,
and the suite of the five net.policy-* rows, each probing just inside and just outside its rule.

  rule                                                     inside               outside
  endPort: TCP 6000-7000 to peer-in                        peer-in 7000/tcp     peer-in 7001/tcp
  named port: TCP "echo" (containerPort 7100) to peer-out  peer-out 7100/tcp    peer-out 7101/tcp
  ipBlock: UDP 7200 to the pod CIDR except peer-out /32    peer-in 7200/udp     peer-out 7200/udp
  one peer, namespaceSelector AND podSelector peer=in,     peer-in 7300/tcp     peer-out 7300/tcp
    TCP 7300                                               (both match)         (namespace only)
  SCTP 7400 to peer-in                                     peer-in 7400/sctp    peer-in 7401/sctp

No rule admits another row's pair (each has its own port or protocol), so a row answers for its own
field only, while every rule lives in the one policy, as a controller that stops syncing on one
field would show on the rows of the others. The peers are created by the test (traffic rule: pods
of the cluster's own namespace); each prints every line it received (the test's own record)."""
import json
import os

import cluster_util as c
import real_manifests as rm
from cluster_util import u

TCP_PORTS, UDP_PORTS = "7000,7001,7100,7101,7300", "7200"
PEER_LABEL = "sandprobe.io/field-peer"
ROWS = ["net.policy-endport", "net.policy-named-port", "net.policy-ipblock-except",
        "net.policy-peer-and", "net.policy-sctp"]
JUDGED = ROWS[:4]  # SCTP is not in this kernel: never judged here (docs/probes.md, net.policy-*)


def peer_pod(name, role, named_port):
    """A Pod Security restricted pod of the probe image with runtimeClassName runc (the cluster's
    admission policy requires one), serving cluster_util.ECHO_SERVER for 15 minutes at most."""
    container = {"name": "peer", "image": rm.IMAGE,
                 "command": ["python3", "-u", "-c", c.ECHO_SERVER, "0.0.0.0", TCP_PORTS,
                             UDP_PORTS, "900"],
                 "securityContext": {"allowPrivilegeEscalation": False,
                                     "readOnlyRootFilesystem": True,
                                     "capabilities": {"drop": ["ALL"]}}}
    if named_port:
        container["ports"] = [{"name": "echo", "containerPort": 7100, "protocol": "TCP"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": c.NS, "labels": {PEER_LABEL: role}},
            "spec": {"runtimeClassName": "runc", "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 1,
                     "securityContext": {"runAsNonRoot": True, "runAsUser": 65534,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [container]}}


def start_peers(cluster, cleanup):
    """Creates peer-in and peer-out, waits until both serve; cleanup(fn, *args) registers their
    deletion. -> (peer-in IP, peer-out IP)."""
    cleanup(cluster.kubectl, "-n", c.NS, "delete", "pod", "field-peer-in", "field-peer-out",
            "--ignore-not-found", "--wait=true", check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "List",
        "items": [peer_pod("field-peer-in", "in", False),
                  peer_pod("field-peer-out", "out", True)]}))
    cluster.kubectl("-n", c.NS, "wait", "--for=condition=Ready", "pod/field-peer-in",
                    "pod/field-peer-out", "--timeout=90s", timeout=100)
    ips = []
    for name in ("field-peer-in", "field-peer-out"):
        ips.append(cluster.get("-n", c.NS, "pod", name)["status"]["podIP"])
        for _ in range(50):  # Ready says the container started; READY says it listens
            if "READY" in cluster.kubectl("-n", c.NS, "logs", name).stdout:
                break
        else:
            raise AssertionError("%s never printed READY" % name)
    return tuple(ips)


def policy(path, out_ip, and_as_or=False, endport_to=7000):
    """Writes the allow-list NetworkPolicy (the module docstring's table) to `path`. and_as_or:
    the AND peer written as two peers, the classic mistake (an OR). endport_to: the range's end."""
    sel = lambda role: {"podSelector": {"matchLabels": {PEER_LABEL: role}}}
    ns = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": c.NS}}}
    peer_and = [ns, sel("in")] if and_as_or else [dict(ns, **sel("in"))]
    rules = [
        {"to": [sel("in")], "ports": [{"protocol": "TCP", "port": 6000, "endPort": endport_to}]},
        {"to": [sel("out")], "ports": [{"protocol": "TCP", "port": "echo"}]},
        {"to": [{"ipBlock": {"cidr": c.lib_value("CLUSTER_POD_CIDR"),
                             "except": [out_ip + "/32"]}}],
         "ports": [{"protocol": "UDP", "port": 7200}]},
        {"to": peer_and, "ports": [{"protocol": "TCP", "port": 7300}]},
        {"to": [sel("in")], "ports": [{"protocol": "SCTP", "port": 7400}]}]
    with open(path, "w") as f:
        json.dump({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                   "metadata": {"name": "policy-fields"},
                   "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": rules}}, f)
    return path


def params(in_ip, out_ip):
    """The suite's parameters of the five rows: each row's inside and outside pairs."""
    pair = lambda name, ip, port, proto: ["%s=%s:%d/%s" % (name, ip, port, proto)]
    return {
        "net.policy-endport": {"inside": pair("range-end", in_ip, 7000, "tcp"),
                               "outside": pair("after-range", in_ip, 7001, "tcp")},
        "net.policy-named-port": {"inside": pair("echo", out_ip, 7100, "tcp"),
                                  "outside": pair("unnamed", out_ip, 7101, "tcp")},
        "net.policy-ipblock-except": {"inside": pair("in-cidr", in_ip, 7200, "udp"),
                                      "outside": pair("excepted", out_ip, 7200, "udp")},
        "net.policy-peer-and": {"inside": pair("both", in_ip, 7300, "tcp"),
                                "outside": pair("namespace-only", out_ip, 7300, "tcp")},
        "net.policy-sctp": {"inside": pair("sctp", in_ip, 7400, "sctp"),
                            "outside": pair("after-sctp", in_ip, 7401, "sctp")}}


def run_args(directory, cluster, cleanup, arm="k8s-fields", extra=(), **policy_kw):
    """Peers, policy and suite: -> the `sandprobe run` arguments of the table (control k8s-open,
    candidate `arm` with the policy and `extra` kubernetes lines)."""
    in_ip, out_ip = start_peers(cluster, cleanup)
    pol = policy(os.path.join(directory, arm + "-policy.json"), out_ip, **policy_kw)
    ctl = rm.write_manifest(os.path.join(directory, "open.yaml"), "k8s-open")
    cand = rm.write_manifest(os.path.join(directory, arm + ".yaml"), arm, control=ctl,
                             policy=pol, extra=extra)
    suite = u.write_suite(directory, "policy-fields", ROWS, params=params(in_ip, out_ip))
    return ["--suite", suite, "--sandbox", cand] + rm.FAST
