#!/usr/bin/env python3
"""FAKE Kubernetes API server for the C++ kubernetes driver's tests. NOT a Kubernetes cluster.

A real HTTPS server on 127.0.0.1 (kernel-chosen port) that answers the paths and JSON shapes of
the real API (batch/v1 Job, core/v1 Pod/Event/Node/Namespace, networking.k8s.io/v1 NetworkPolicy,
meta/v1 Status and WatchEvent, authorization.k8s.io/v1 self-subject reviews), and does on cue what
a real one does only by accident: the faults below, quota exhaustion, admission answers, a
watch closed after N events, exact request logs. The contract with the driver is CONTRACT.md
beside this file. Real workloads, NetworkPolicy enforcement, RBAC and kubelet behaviour are the
real cluster's to test (ci/cluster, harness/testing/cluster); docs/design.md says why each thing
here cannot be had from it.

Usage: fake_kube.py --kubeconfig-out DIR/kubeconfig --state-dir DIR [--nodes n1,n2:unschedulable,
n3:tainted] [--admission admit|warn|webhook-403|psa-403|vap-422] [--auth token|client-cert]
[--version-string v1.32.3+k3s1] [--reviews FILE] [--fault F]...
Prints `READY https://127.0.0.1:<port>` when it listens and writes the kubeconfig (the fake's CA,
made with the `openssl` CLI; an administrator's bearer token or, with --auth client-cert, client
certificate; namespace sandprobe). Namespaces: default, kube-system, sandprobe. SIGTERM/SIGINT:
kill every pod's processes, exit 0.

Faults (--fault, repeatable; POST /fake/script {"faults": [...]} replaces them at runtime):
  watch-break-after=N      every watch stream is cut (socket closed mid-stream) after N events
  watch-gone[=N]           the next N (1) watches answer one ERROR event with a 410 Expired Status
  429=PATH_REGEX:COUNT     the first COUNT requests whose path?query matches answer 429 +
                           Retry-After: 1
  quota-jobs=N / quota-pods=N   403 "exceeded quota" once N jobs / pods exist in the namespace
  hang-after=N             after N API requests, accept requests and never answer
  oom=PROBE / evict=PROBE  pods of that probe end OOMKilled (137) / Evicted 0.3 s after start
  pod-fails-create=PROBE   the Job gets a FailedCreate event and never a pod
  pod-create-conflict=PROBE  a FailedCreate event with the quota's 409 conflict, the pod 1 s later
                           (the real Job controller retries; measured under 15 Jobs at once)
  gc-delay=S               a Job deleted with propagationPolicy Background keeps its pods S
                           seconds more (the real garbage collector deletes them after the Job)
  forbid=PATH_REGEX        requests whose path?query matches answer 403 Forbidden in the RBAC
                           authorizer's words, for User "system:serviceaccount:sandprobe:sandprobe"
A PROBE matches a label or annotation value of the Job or its pod template (e.g.
sandprobe.io/probe: net.dns), or a substring of the container command/args.
Control endpoints (no authentication, never faulted): GET /fake/state (every stored object,
settings, apiRequests, watches), GET /fake/requests (method, path?query, status, time of each API
request), POST /fake/script ({"faults", "admission", "compact": true drops the watch history}).
"""
import argparse
import base64
import os
import re
import secrets
import signal
import ssl
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube_auth import load_reviews  # noqa: E402
from kube_cluster import ADMISSION_MODES, Cluster  # noqa: E402
from kube_http import FakeServer  # noqa: E402

NAMESPACES = ("default", "kube-system", "sandprobe")


def parse_faults(items):
    """['watch-break-after=3', '429=jobs:2', ...] -> fault dict; ValueError on unknown faults."""
    f = {"watch-break-after": None, "watch-gone": 0, "429": [], "quota-jobs": None,
         "quota-pods": None, "hang-after": None, "oom": set(), "evict": set(),
         "pod-fails-create": set(), "pod-create-conflict": set(), "forbid": [], "gc-delay": 0.0}
    for item in items:
        key, _, value = item.partition("=")
        if key in ("watch-break-after", "quota-jobs", "quota-pods", "hang-after"):
            f[key] = int(value)
        elif key == "gc-delay":
            f[key] = float(value)
        elif key == "watch-gone":
            f[key] = int(value) if value else 1
        elif key == "429":
            regex, _, count = value.rpartition(":")
            re.compile(regex)
            f["429"].append([regex, int(count)])
        elif key == "forbid":
            re.compile(value)
            f["forbid"].append(value)
        elif key in ("oom", "evict", "pod-fails-create", "pod-create-conflict") and value:
            f[key].add(value)
        else:
            raise ValueError(f"unknown fault {item!r}")
    return f


def parse_nodes(text):
    """--nodes n1,n2:unschedulable,n3:tainted -> Node objects (Ready, InternalIP 127.0.0.1)."""
    nodes = []
    for entry in text.split(","):
        name, *flags = entry.split(":")
        spec, taints = {}, []
        if "unschedulable" in flags:
            spec["unschedulable"] = True
            taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
        if "tainted" in flags:
            taints.append({"key": "sandprobe.io/tainted", "value": "true", "effect": "NoSchedule"})
        if taints:
            spec["taints"] = taints
        nodes.append({
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64"}},
            "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}],
                       "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                     {"type": "Hostname", "address": name}]}})
    return nodes


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_pki(d):
    """CA, server cert (SAN 127.0.0.1, localhost), client cert (O=sandprobe-ci, CN=sandprobe)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.crt", "-days", "7",
            "-subj", "/CN=fake-kube-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, cn, ext in (
            ("server", "/CN=fake-kube-apiserver",
             "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
            ("client", "/O=sandprobe-ci/CN=sandprobe", "extendedKeyUsage=clientAuth\n")):
        with open(f"{d}/{name}.ext", "w") as f:
            f.write("basicConstraints=CA:FALSE\n"
                    "keyUsage=critical,digitalSignature,keyEncipherment\n"
                    "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n" + ext)
        openssl("req", *ec, "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr", "-subj", cn)
        openssl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.crt", "-CAkey",
                f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/{name}.crt", "-days", "7",
                "-extfile", f"{d}/{name}.ext")
    for name in ("ca.key", "server.key", "client.key"):
        os.chmod(f"{d}/{name}", 0o600)


def write_kubeconfig(path, server, d, token, auth):
    def b64(name):
        with open(f"{d}/{name}", "rb") as f:
            return base64.b64encode(f.read()).decode()
    user = (f"client-certificate-data: {b64('client.crt')}\n"
            f"    client-key-data: {b64('client.key')}" if auth == "client-cert" else
            f"token: {token}")
    text = (f"apiVersion: v1\nkind: Config\nclusters:\n- name: fake-kube\n  cluster:\n"
            f"    server: {server}\n    certificate-authority-data: {b64('ca.crt')}\n"
            f"contexts:\n- name: fake-kube\n  context:\n    cluster: fake-kube\n"
            f"    user: fake-kube-user\n    namespace: sandprobe\ncurrent-context: fake-kube\n"
            f"preferences: {{}}\nusers:\n- name: fake-kube-user\n  user:\n    {user}\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description="FAKE Kubernetes API server for sandprobe tests")
    ap.add_argument("--kubeconfig-out", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--nodes", default="fake-node-1")
    ap.add_argument("--admission", default="admit", choices=ADMISSION_MODES)
    ap.add_argument("--auth", default="token", choices=("token", "client-cert"))
    ap.add_argument("--version-string", default="v1.32.3+k3s1")
    ap.add_argument("--reviews", help="JSON: bearer token -> user and review answers "
                                      "(kube_auth.py)")
    ap.add_argument("--fault", action="append", default=[])
    args = ap.parse_args(argv)

    m = re.match(r"v(\d+)\.(\d+)", args.version_string)
    try:
        if not m:
            raise ValueError(f"bad --version-string {args.version_string!r}")
        settings = {"admission": args.admission, "faults": parse_faults(args.fault)}
        reviews = load_reviews(args.reviews)
    except (ValueError, OSError) as e:
        print(f"fake_kube: {e}", file=sys.stderr)
        return 2
    version = {"major": m.group(1), "minor": m.group(2), "gitVersion": args.version_string,
               "gitCommit": "fake", "gitTreeState": "clean", "buildDate": "2024-12-10T00:00:00Z",
               "goVersion": "go1.22.9", "compiler": "gc", "platform": "linux/amd64"}
    state_dir = os.path.abspath(args.state_dir)
    os.makedirs(os.path.join(state_dir, "logs"), exist_ok=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        make_pki(state_dir)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"fake_kube: start failed: {e}", file=sys.stderr)
        return 2
    cluster = Cluster(settings, parse_nodes(args.nodes), NAMESPACES,
                      state_dir, os.geteuid() == 0)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(f"{state_dir}/server.crt", f"{state_dir}/server.key")
    ctx.load_verify_locations(f"{state_dir}/ca.crt")
    ctx.verify_mode = ssl.CERT_OPTIONAL
    token = secrets.token_urlsafe(32)
    server = FakeServer(cluster, ctx, token, reviews, version, parse_faults)
    cluster.kubelet.port = port = server.server_address[1]
    url = f"https://127.0.0.1:{port}"
    write_kubeconfig(args.kubeconfig_out, url, state_dir, token, args.auth)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                     daemon=True).start()
    print(f"READY {url}", flush=True)
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    server.hang.set()
    with cluster.store.cond:
        cluster.stopping.set()
        cluster.store.cond.notify_all()
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
