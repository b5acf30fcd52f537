#!/usr/bin/env python3
"""FAKE Kubernetes API server for sandprobe's tests. NOT a Kubernetes cluster.

It is a real HTTPS server on 127.0.0.1 (kernel-chosen port) that answers the paths and JSON shapes
of the real API (batch/v1 Job, core/v1 Pod/Event/Node/Namespace, networking.k8s.io/v1
NetworkPolicy, meta/v1 Status and WatchEvent) so the C++ `kubernetes` driver can be tested where
no cluster can run. The contract with the driver is CONTRACT.md beside this file.

Two kubelets (--kubelet):
  process (default)  pods are local processes (kube_procs.py). Used ONLY for the API-behaviour
                     self-tests (watch, faults, quotas, admission, jobs...): its network model is
                     coarse (denied egress = an empty network namespace, egress rules
                     all-or-nothing, the image and most of securityContext ignored).
  docker             pods are REAL containers (kube_docker.py): a pause + app container per pod on
                     the fake's own internal docker network, kube-proxy-style Service DNAT, cluster
                     DNS, NetworkPolicy as packet filters (kube_netpol.py), securityContext /
                     limits / emptyDir / RuntimeClass / service account token mapped to docker
                     flags. Needs root and a running dockerd; everything it creates is labelled
                     io.sandprobe.fake-kube=<instance> and io.sandprobe.fake-kube.pid=<pid>.

Real behaviours it models:
  - bearer-token or client-certificate auth over TLS (CA made with the `openssl` CLI), 401 Status;
    the kubeconfig's credentials are an administrator (system:masters), each service account's
    token (mounted in its pods; POST /fake/token) is that account;
  - RBAC (kube_rbac.py): Role, RoleBinding, ClusterRole, ClusterRoleBinding created, read and
    deleted through rbac.authorization.k8s.io/v1, the bootstrap roles and bindings of a new
    cluster; every API request authorized (403 Status in the authorizer's words);
    authorization.k8s.io/v1 SelfSubjectRulesReview / SelfSubjectAccessReview answered from them;
  - object metadata (uid, one global resourceVersion, creationTimestamp, labels), XList responses,
    Status errors 400/401/403/404/405/409/410/422/429 (+ Retry-After);
  - labelSelector (=, ==, !=, exists, !exists, in, notin; comma = AND), fieldSelector
    (metadata.name, involvedObject.name, ...), watch=1 as chunked newline-delimited WatchEvents
    from a resourceVersion (none or "0": synthetic ADDED for what exists), timeoutSeconds,
    BOOKMARK only with allowWatchBookmarks, 410 Expired as an ERROR event for a compacted rv;
  - DELETE with propagationPolicy (Background/Foreground delete a Job's pods; Orphan, and the
    batch/v1 REST default when none is given, leave them), deletecollection by labelSelector;
  - the job controller, scheduler, kubelet and NetworkPolicy rules in kube_cluster.py /
    kube_procs.py (their docstrings list what is and is not modelled), logs with limitBytes
    (400 while the container is waiting, 404 once the pod is gone), dryRun=All;
  - admission for bare pods (--admission): admit, warn (201 + `Warning: 299 - "..."`), webhook-403,
    psa-403, vap-422, each with the message text the real component uses. Admission applies to
    pods created through POST .../pods (dry run or not; a non-dry-run bare pod is stored and run);
    pods made by the job controller are admitted unless a fault or an unknown runtimeClassName
    makes the Job's pod creation fail (FailedCreate event).
  - server-side field validation of creates (kube_schema.py: its field table, Kubernetes API
    v1.32): ?fieldValidation=Strict answers an unknown or duplicate field with the real 400
    BadRequest `strict decoding error: unknown field "spec.x"`; Warn (the default) with one
    `Warning: 299` header per field; Ignore silently; unknown fields are never stored; a
    --version-string below v1.25 ignores the parameter, as those servers do;
  - Services (type ClusterIP only; clusterIP from 10.96.0.0/12, never .1/.10; 422 Invalid on bad
    ports/type; pre-existing default/kubernetes 10.96.0.1:443 and kube-system/kube-dns
    10.96.0.10:53), RuntimeClass objects (--runtime-classes NAME=HANDLER), kube-system DaemonSets
    and node annotations of the --cni, APIResourceList discovery for every group/version served.
Key simplifications, process kubelet (details in kube_cluster.py / kube_procs.py): one pod per
Job (backoffLimit > 0 is ignored: the first pod's end ends the Job); a memory limit is enforced by
sampling the pod's process-tree RSS every 50 ms and SIGKILLing it; denied egress is a fresh
network namespace with a down loopback; NetworkPolicy egress rules are all-or-nothing (none =
deny all, any = allow all); pod processes run the host's binaries (the image is ignored).
The docker kubelet's model and limits: kube_docker.py and kube_netpol.py docstrings.
NOT modelled: pagination (limit/continue are ignored, everything comes in one page), PATCH/PUT,
RBAC escalation checks and aggregated roles, ServiceAccount objects, ResourceQuota objects
(quota is the `quota-jobs` / `quota-pods` faults), most defaulting, server-side apply,
Endpoints/EndpointSlice objects (endpoints are computed internally), any resource not listed
above, HTTP/2.

Faults (--fault, repeatable; POST /fake/script {"faults": [...]} replaces them at runtime):
  watch-break-after=N      every watch stream is cut (socket closed mid-stream) after N events
  watch-gone               the next watch answers one ERROR event with a 410 Expired Status
  429=PATH_REGEX:COUNT     the first COUNT requests whose path?query matches answer 429 +
                           Retry-After: 1
  quota-jobs=N / quota-pods=N   403 "exceeded quota" once N jobs / pods exist in the namespace
  hang-after=N             after N API requests, accept requests and never answer
  oom=PROBE / evict=PROBE  pods of that probe end OOMKilled (137) / Evicted ~0.3 s after start
  pod-fails-create=PROBE   the Job gets a FailedCreate event and never a pod
  gc-delay=S               a Job deleted with propagationPolicy Background keeps its pods S
                           seconds more, as the real garbage collector deletes them after the
                           Job, asynchronously (a same-named Job's selector then lists them)
  forbid=PATH_REGEX        requests whose path?query matches answer 403 Forbidden as RBAC words
                           it: `<resource> is forbidden: User "system:serviceaccount:sandprobe:
                           sandprobe" cannot <verb> resource "<resource>" in API group "<group>"
                           in the namespace "<ns>"` (or "at the cluster scope")
A PROBE matches a label or annotation value of the Job or its pod template (e.g.
sandprobe.io/probe: net.dns), or a substring of the container command/args.
Control endpoints (no auth, never faulted): GET /fake/state (every stored object, pod network
decisions, settings; docker mode adds "docker": {network, nodes}, "dns_queries" and
"serviceAccountTokens": {"ns/name": {sha256, length, path}} - never a token), POST /fake/token
({"namespace", "serviceAccount"} -> {"token"}: a test's TokenRequest), GET /fake/processes (pids of
running pod processes), GET /fake/containers (this instance's docker containers; [] in process
mode), GET /fake/requests (method, path, status, listener ("loopback" or, for what pods asked,
"pod network") of each API request), POST /fake/script (JSON:
"network-policy" (enforce | ignore | enforce-on=n1,n2 | enforce-after=S, the last docker mode
only), "policy-delay", "admission", "faults", "add-faults", "compact": true drops the watch
history).

Usage: fake_kube.py --kubeconfig-out DIR/kubeconfig --state-dir DIR [--network-policy
enforce|ignore|enforce-on=n1,n2|enforce-after=S] [--policy-delay S]
[--nodes n1,n2:unschedulable,n3:tainted] [--admission MODE] [--runtime-classes gvisor=runsc,kata]
[--auth token|client-cert] [--fault F]... [--kubelet process|docker] [--infra-image IMAGE]
[--pod-pids-limit N] [--cni flannel|k3s|calico|cilium|none] [--version-string v1.32.3+k3s1]
Prints `READY https://127.0.0.1:<port>` when it listens (docker mode: also serves the API on
<pod network gateway>:6443, reached from pods as kubernetes.default.svc / 10.96.0.1:443);
SIGTERM/SIGINT: stop accepting, kill every pod process tree / remove every container, the
network and the host firewall chains of this instance, exit 0. SIGKILL leaves pod processes
(process mode) or containers, network and chains (docker mode): docker-mode leftovers are removed
by the next fake that starts (their pid label names a dead process).
"""
import argparse
import base64
import copy
import json
import os
import re
import secrets
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube_cluster import Cluster  # noqa: E402
from kube_procs import become_subreaper, netns_wrapper  # noqa: E402
import kube_rbac  # noqa: E402
from kube_docker import SA_DIR  # noqa: E402
from kube_store import (RESOURCES, ApiError, check_field_selector, not_found,  # noqa: E402
                        parse_field_selector, parse_label_selector, status)
from kube_schema import (MODES, ROOTS, Pairs, decode, loads_pairs, plain,  # noqa: E402
                         status_message, warning_header)

GROUPS = {"pods": "v1", "events": "v1", "namespaces": "v1", "nodes": "v1", "jobs": "batch/v1",
          "networkpolicies": "networking.k8s.io/v1", "services": "v1",
          "runtimeclasses": "node.k8s.io/v1", "daemonsets": "apps/v1",
          "roles": kube_rbac.RBAC_GV, "rolebindings": kube_rbac.RBAC_GV,
          "clusterroles": kube_rbac.RBAC_GV, "clusterrolebindings": kube_rbac.RBAC_GV}
CNIS = ("flannel", "k3s", "calico", "cilium", "none")
ADMISSION_MODES = ("admit", "warn", "webhook-403", "psa-403", "vap-422")
VERSION = {"major": "1", "minor": "31", "gitVersion": "v1.31.4+fake", "gitCommit": "fake",
           "gitTreeState": "clean", "buildDate": "2024-12-10T00:00:00Z", "goVersion": "go1.22.9",
           "compiler": "gc", "platform": "linux/amd64"}


# ---------------------------------------------------------------------------- settings
def parse_faults(items):
    """['watch-break-after=3', '429=jobs:2', ...] -> fault dict; ValueError on unknown faults."""
    f = {"watch-break-after": None, "watch-gone": 0, "429": [], "quota-jobs": None,
         "quota-pods": None, "hang-after": None, "oom": set(), "evict": set(),
         "pod-fails-create": set(), "forbid": [], "gc-delay": 0.0}
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
        elif key in ("oom", "evict", "pod-fails-create"):
            if not value:
                raise ValueError(f"fault {key} needs a probe id")
            f[key].add(value)
        else:
            raise ValueError(f"unknown fault {item!r}")
    return f


def apply_network_policy(settings, text, docker_mode=False):
    if text in ("enforce", "ignore"):
        settings["network-policy"], settings["enforce-on"] = text, None
        settings["enforce-after"] = 0.0
    elif text.startswith("enforce-on="):
        settings["network-policy"] = "enforce"
        settings["enforce-on"] = {n for n in text.split("=", 1)[1].split(",") if n}
        settings["enforce-after"] = 0.0
    elif text.startswith("enforce-after="):
        if not docker_mode:
            raise ValueError("--network-policy enforce-after=S needs --kubelet docker")
        settings["network-policy"] = "enforce"
        settings["enforce-on"] = None
        settings["enforce-after"] = float(text.split("=", 1)[1])
    else:
        raise ValueError(f"bad --network-policy {text!r}")


def forbidden(method, path, query):
    """403 Forbidden Status as the RBAC authorizer words it (scripted by --fault forbid=RE)."""
    return kube_rbac.forbidden("system:serviceaccount:sandprobe:sandprobe",
                               kube_rbac.request_attributes(method, path, query))


def settings_json(settings):
    def conv(v):
        if isinstance(v, set):
            return sorted(v)
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v
    return conv(settings)


def cni_annotations(cni, name, ip):
    """Node annotations the real CNI (or k3s) writes, with this fake's values."""
    flannel = {"flannel.alpha.coreos.com/backend-type": "vxlan",
               "flannel.alpha.coreos.com/backend-data": '{"VNI":1,"VtepMAC":"0a:58:0a:2a:00:01"}',
               "flannel.alpha.coreos.com/kube-subnet-manager": "true",
               "flannel.alpha.coreos.com/public-ip": ip}
    if cni == "flannel":
        return flannel
    if cni == "k3s":
        return dict(flannel, **{"k3s.io/node-args": '["server"]', "k3s.io/hostname": name,
                                "k3s.io/internal-ip": ip,
                                "k3s.io/node-config-hash": "FAKEKUBE4ZQ7V3WUF6YQKX2C",
                                "node.alpha.kubernetes.io/ttl": "0"})
    if cni == "calico":
        return {"projectcalico.org/IPv4Address": f"{ip}/24",
                "projectcalico.org/IPv4IPIPTunnelAddr": "10.42.0.1"}
    if cni == "cilium":
        return {"io.cilium.network.ipv4-cilium-host": "10.0.0.1",
                "io.cilium.network.ipv4-pod-cidr": "10.0.0.0/24",
                "io.cilium.network.ipv4-health-ip": "10.0.0.2",
                "network.cilium.io/ipv4-cilium-host": "10.0.0.1",
                "network.cilium.io/ipv4-pod-cidr": "10.0.0.0/24"}
    return {}


def node_names(text):
    return [entry.split(":")[0] for entry in text.split(",")]


def parse_nodes(text, ips=None, cni="none"):
    nodes = []
    for entry in text.split(","):
        name, *flags = entry.split(":")
        ip = (ips or {}).get(name, "127.0.0.1")
        spec, taints = {}, []
        if "unschedulable" in flags:
            spec["unschedulable"] = True
            taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
        if "tainted" in flags:
            taints.append({"key": "sandprobe.io/tainted", "value": "true", "effect": "NoSchedule"})
        if taints:
            spec["taints"] = taints
        nodes.append({"metadata": {"name": name, "annotations": cni_annotations(cni, name, ip),
                                   "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux"}},
            "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}],
                       "addresses": [{"type": "InternalIP", "address": ip},
                                     {"type": "Hostname", "address": name}],
                       "nodeInfo": {"kubeletVersion": VERSION["gitVersion"],
                                    "containerRuntimeVersion": "fake://1.0",
                                    "operatingSystem": "linux", "architecture": "amd64"}}})
    return nodes


# ---------------------------------------------------------------------------- TLS
def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_pki(d, extra_sans=()):
    """CA, server cert (SAN 127.0.0.1, localhost, kubernetes.default.svc[.cluster.local],
    10.96.0.1 + extra_sans), client cert (CN=sandprobe) in d, by openssl."""
    sans = "".join(f",{x}" for x in extra_sans)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.crt", "-days", "7",
            "-subj", "/CN=fake-kube-ca", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, cn, ext in (
            ("server", "/CN=fake-kube-apiserver",
             "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc,"
             "DNS:kubernetes.default.svc.cluster.local,DNS:kubernetes.default,DNS:kubernetes,"
             f"IP:10.96.0.1{sans}\n"
             "extendedKeyUsage=serverAuth\n"),
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


def write_kubeconfig(path, server, d, token, auth, paths, namespace):
    def b64(name):
        with open(f"{d}/{name}", "rb") as f:
            return base64.b64encode(f.read()).decode()
    ca = f"certificate-authority: {d}/ca.crt" if paths else \
        f"certificate-authority-data: {b64('ca.crt')}"
    if auth == "client-cert":
        user = (f"client-certificate: {d}/client.crt\n    client-key: {d}/client.key" if paths else
                f"client-certificate-data: {b64('client.crt')}\n"
                f"    client-key-data: {b64('client.key')}")
    else:
        user = f"token: {token}"
    text = (f"apiVersion: v1\nkind: Config\nclusters:\n- name: fake-kube\n  cluster:\n"
            f"    server: {server}\n    {ca}\ncontexts:\n- name: fake-kube\n  context:\n"
            f"    cluster: fake-kube\n    user: fake-kube-user\n    namespace: {namespace}\n"
            f"current-context: fake-kube\npreferences: {{}}\nusers:\n- name: fake-kube-user\n"
            f"  user:\n    {user}\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


# ---------------------------------------------------------------------------- HTTP
class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, cluster, ssl_ctx, token, address=("127.0.0.1", 0)):
        # The fixed gateway:6443 listener must bind again while connections of the previous
        # fake on the same (reused) subnet sit in TIME_WAIT.
        self.allow_reuse_address = address[1] != 0
        super().__init__(address, Handler)
        self.cluster = cluster
        self.ssl_ctx = ssl_ctx
        self.token = token
        self.hang = threading.Event()  # set at shutdown: hung handlers return
        self.api_requests = 0
        self.request_log = []
        self.listener = "loopback"  # "pod network": the gateway:6443 listener pods reach
        self.counter_lock = threading.Lock()
        self.watch_count = 0

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.ssl_ctx.wrap_socket(sock, server_side=True,
                                        do_handshake_on_connect=False), addr


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube"
    sys_version = ""

    def setup(self):
        self.request.settimeout(10)
        try:
            self.request.do_handshake()
        except (ssl.SSLError, OSError):
            self.handshake_ok = False
        else:
            self.handshake_ok = True
        self.request.settimeout(600)
        super().setup()

    def handle(self):
        if self.handshake_ok:
            try:
                super().handle()
            except (ConnectionError, ssl.SSLError, TimeoutError):
                pass

    def log_message(self, fmt, *args):  # quiet; /fake/requests has the log
        pass

    # -- responses
    def send_json(self, code, obj, headers=None):
        """headers: name -> value, or a list of values (one header line each, e.g. Warning)."""
        body = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            for one in (v if isinstance(v, list) else [v]):
                self.send_header(k, one)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.status_sent = code

    def send_text(self, code, data):
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.status_sent = code

    def send_error_status(self, err):
        self.send_json(err.code, err.body, err.headers)

    # -- dispatch
    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def read_body(self):
        self.body_pairs = None
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        if not data:
            return None
        try:
            # Objects keep their keys in order and their duplicates for strict field validation
            # (kube_schema.py); self.body is the plain value, a duplicated key's last value.
            self.body_pairs = loads_pairs(data)
            return plain(self.body_pairs)
        except json.JSONDecodeError as e:
            raise ApiError(400, "BadRequest", f"the body of the request was in an unknown "
                           f"format - accepted media types include: application/json ({e})")

    def authenticate(self):
        """The user (name, groups) of the request's credentials, or None (kube_rbac.py): the
        kubeconfig's token or client certificate is the administrator, a service-account token
        that account."""
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            given = auth[7:].strip()
            if secrets.compare_digest(given, self.server.token):
                return kube_rbac.ADMIN
            cluster = self.server.cluster
            with cluster.store.cond:
                accounts = list(cluster.sa_tokens.items())
            for token, (ns, name) in accounts:
                if secrets.compare_digest(given, token):
                    return kube_rbac.sa_user(ns, name)
        try:
            return kube_rbac.ADMIN if self.request.getpeercert() else None
        except (ValueError, ssl.SSLError):
            return None

    def dispatch(self, method):
        self.status_sent = None
        url = urllib.parse.urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query,
                                                            keep_blank_values=True).items()}
        srv = self.server
        try:
            if path.startswith("/fake/"):
                self.body = self.read_body()
                return self.control(method, path)
            with srv.counter_lock:
                srv.api_requests += 1
                n = srv.api_requests
            faults = srv.cluster.settings["faults"]
            if faults["hang-after"] is not None and n > faults["hang-after"]:
                self.status_sent = "hang"
                self.log_request_entry(method)
                srv.hang.wait()
                self.close_connection = True
                return
            self.body = self.read_body()
            self.user = self.authenticate()
            if self.user is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            attrs = kube_rbac.request_attributes(method, path, query)
            with srv.cluster.store.cond:
                allowed, _ = kube_rbac.authorize(srv.cluster.store, self.user, attrs)
            if not allowed:
                raise kube_rbac.forbidden(self.user[0], attrs)
            for regex in faults.get("forbid") or []:
                if re.search(regex, self.path):
                    raise forbidden(method, path, query)
            with srv.counter_lock:
                for entry in faults["429"]:
                    if entry[1] > 0 and re.search(entry[0], self.path):
                        entry[1] -= 1
                        raise ApiError(429, "TooManyRequests",
                                       "Too many requests, please try again later.",
                                       {"causes": [{"message": "scripted by --fault 429"}],
                                        "retryAfterSeconds": 1}, {"Retry-After": "1"})
            self.route(method, path, query)
        except ApiError as e:
            self.send_error_status(e)
        except (ConnectionError, ssl.SSLError, TimeoutError):
            self.close_connection = True
        except Exception as e:  # a bug in the fake: a 500 Status, never a hung client
            import traceback
            traceback.print_exc()
            try:
                self.send_json(500, status(500, "InternalError",
                                           f"fake-kube internal error: {e!r}"))
            except OSError:
                pass
        finally:
            if not path.startswith("/fake/") and self.status_sent != "hang":
                self.log_request_entry(method)

    def log_request_entry(self, method):
        with self.server.counter_lock:
            log = self.server.request_log
            log.append({"method": method, "path": self.path, "status": self.status_sent,
                        "time": time.time(), "listener": self.server.listener})
            if len(log) > 20000:
                del log[:1000]

    def route(self, method, path, query):
        parts = path.strip("/").split("/")
        if path == "/version":
            return self.send_json(200, VERSION)
        if len(parts) == 3 and parts[0] == "apis" and f"{parts[1]}/{parts[2]}" == \
                kube_rbac.AUTHZ_GV:
            return self.send_json(200, {
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": kube_rbac.AUTHZ_GV,
                "resources": [{"name": r, "singularName": "", "namespaced": False, "kind": k,
                               "verbs": ["create"]} for r, k in kube_rbac.REVIEWS.items()]})
        if len(parts) == 4 and "/".join(parts[1:3]) == kube_rbac.AUTHZ_GV and \
                parts[0] == "apis" and parts[3] in kube_rbac.REVIEWS:
            return self.review(method, parts[3])
        if len(parts) == 3 and parts[0] == "apis" and f"{parts[1]}/{parts[2]}" in \
                set(GROUPS.values()):
            gv = f"{parts[1]}/{parts[2]}"
            return self.send_json(200, {
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": [{"name": r, "singularName": RESOURCES[r][0].lower(),
                               "namespaced": RESOURCES[r][2], "kind": RESOURCES[r][0],
                               "verbs": ["create", "delete", "deletecollection", "get", "list",
                                         "watch"]}
                              for r in sorted(GROUPS) if GROUPS[r] == gv]})
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": "127.0.0.1"}]})
        if path == "/apis":
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"}}
                for g in ("apps", "authorization.k8s.io", "batch", "networking.k8s.io",
                          "node.k8s.io", "rbac.authorization.k8s.io")]})
        # /api/v1/... or /apis/<group>/<version>/...
        if parts[0] == "api" and len(parts) >= 3 and parts[1] == "v1":
            gv, rest = "v1", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        resource = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if (GROUPS.get(resource) != gv or len(rest) > 3 or
                (ns is None and RESOURCES[resource][2] and name is not None) or
                (ns is not None and not RESOURCES[resource][2])):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if sub is not None and not (resource == "pods" and sub in ("log", "status")) \
                and not (resource == "jobs" and sub == "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if method == "GET" and sub == "log":
            return self.pod_log(ns, name, query)
        if method == "GET" and name is None:
            return self.list_or_watch(resource, ns, query)
        if method == "GET":
            return self.get_one(resource, ns, name)
        if method == "POST" and name is None:
            return self.create(resource, ns, query)
        if method == "DELETE":
            return self.delete(resource, ns, name, query)
        raise ApiError(405, "MethodNotAllowed",
                       f"the server does not allow this method on the requested resource "
                       f"(fake-kube supports GET, POST, DELETE)")

    # -- verbs
    def selectors(self, resource, query):
        lreqs = parse_label_selector(query.get("labelSelector", ""))
        freqs = parse_field_selector(query.get("fieldSelector", ""))
        check_field_selector(resource, freqs)
        return lreqs, freqs

    def get_one(self, resource, ns, name):
        store = self.server.cluster.store
        with store.cond:
            if ns is not None:
                self.server.cluster.require_namespace_locked(ns)
            obj = store.get_locked(resource, ns, name)
            if obj is None:
                group = GROUPS[resource].split("/")[0] if "/" in GROUPS[resource] else ""
                raise not_found(resource, name, group)
            return self.send_json(200, copy.deepcopy(obj))

    def list_or_watch(self, resource, ns, query):
        lreqs, freqs = self.selectors(resource, query)
        if query.get("watch") in ("1", "true", "True"):
            return self.watch(resource, ns, lreqs, freqs, query)
        store = self.server.cluster.store
        with store.cond:
            if ns is not None:
                self.server.cluster.require_namespace_locked(ns)
            items = store.list_locked(resource, ns, lreqs, freqs)
            body = store.list_response_locked(resource, items)
        self.send_json(200, body)

    def watch(self, resource, ns, lreqs, freqs, query):
        cluster = self.server.cluster
        store = cluster.store
        faults = cluster.settings["faults"]
        try:
            timeout = float(query.get("timeoutSeconds") or 1800)
        except ValueError:
            raise ApiError(400, "BadRequest", "invalid timeoutSeconds")
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true", "True")
        rv_text = query.get("resourceVersion", "")
        if rv_text not in ("", "0") and not rv_text.isdigit():
            raise ApiError(400, "BadRequest", f'invalid resource version "{rv_text}"')
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.status_sent = 200
        self.close_connection = True
        kind = RESOURCES[resource][0]

        def chunk(obj):
            data = (json.dumps(obj) + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def gone(err):
            chunk({"type": "ERROR", "object": err.body})
            self.wfile.write(b"0\r\n\r\n")

        with self.server.counter_lock:
            self.server.watch_count += 1
            if faults["watch-gone"] > 0:
                faults["watch-gone"] -= 1
                scripted_gone = True
            else:
                scripted_gone = False
        if scripted_gone:
            with store.cond:
                return gone(ApiError(410, "Expired", f"too old resource version: {rv_text or 0} "
                                     f"({store.rv}) (scripted by --fault watch-gone)"))
        sent = 0
        limit = faults["watch-break-after"]
        deadline = time.monotonic() + timeout
        last_bookmark = time.monotonic()
        pending = []
        with store.cond:
            if rv_text in ("", "0"):
                pending = [{"type": "ADDED", "object": o}
                           for o in store.list_locked(resource, ns, lreqs, freqs)]
                from_rv = store.rv
            else:
                from_rv = int(rv_text)
        while True:
            if not pending:
                with store.cond:
                    while True:
                        if cluster.stopping.is_set():
                            break
                        try:
                            events = store.events_since_locked(from_rv, resource, ns, lreqs, freqs)
                        except ApiError as e:
                            return gone(e)
                        from_rv = store.rv
                        if events:
                            pending = [e for _, e in events]
                            break
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        if bookmarks and time.monotonic() - last_bookmark >= 1.0:
                            break
                        store.cond.wait(min(left, 0.5))
                    current = str(store.rv)
            if cluster.stopping.is_set() or (not pending and time.monotonic() >= deadline):
                self.wfile.write(b"0\r\n\r\n")
                return
            if not pending:
                last_bookmark = time.monotonic()
                chunk({"type": "BOOKMARK", "object": {
                    "kind": kind, "apiVersion": GROUPS[resource],
                    "metadata": {"resourceVersion": current,
                                 "annotations": {"k8s.io/initial-events-end": "true"}}}})
                continue
            for event in pending:
                chunk(event)
                sent += 1
                if limit is not None and sent >= limit:
                    # Cut mid-stream: no terminating chunk, as a dropped connection would.
                    try:
                        self.request.shutdown(2)
                    except OSError:
                        pass
                    return
            pending = []

    def field_validation(self, query):
        """The fieldValidation directive of a create (kube_schema.py): Strict, Warn or Ignore."""
        value = query.get("fieldValidation", "")
        if (int(VERSION["major"]), int(VERSION["minor"])) < (1, 25):
            return "Ignore"  # the parameter is not read before 1.25
        if value not in ("",) + MODES:
            message = (f'Unsupported value: "{value}": supported values: "", "Ignore", "Strict", '
                       '"Warn"')
            raise ApiError(422, "Invalid", 'CreateOptions.meta.k8s.io "" is invalid: '
                           f"fieldValidation: {message}",
                           {"group": "meta.k8s.io", "kind": "CreateOptions", "causes": [
                               {"reason": "FieldValueNotSupported", "message": message,
                                "field": "fieldValidation"}]})
        return value or "Warn"

    def create(self, resource, ns, query):
        cluster = self.server.cluster
        body = self.body
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was empty or not an object")
        dry_run = query.get("dryRun") == "All"
        if "dryRun" in query and not dry_run:
            raise ApiError(400, "BadRequest", f'Invalid dry run value: "{query["dryRun"]}"; '
                           'supported values: "All"')
        # Strict field validation, as the API server decodes the body (kube_schema.py): unknown
        # and duplicate fields are a 400 (Strict), Warning headers (Warn, the default) or nothing
        # (Ignore); the object goes on without the unknown fields.
        mode = self.field_validation(query)
        warnings = []
        if resource in ROOTS and isinstance(self.body_pairs, Pairs):
            body, problems = decode(self.body_pairs, ROOTS[resource])
            if problems and mode == "Strict":
                raise ApiError(400, "BadRequest", status_message(ROOTS[resource], problems))
            if mode == "Warn":
                warnings = [warning_header(p) for p in problems]
        headers = {"Warning": warnings} if warnings else None
        want_kind = RESOURCES[resource][0]
        if body.get("kind") not in (None, want_kind):
            raise ApiError(400, "BadRequest",
                           f"the API version in the data ({body.get('apiVersion')}) does not "
                           f"match the expected API version ({GROUPS[resource]}) or kind "
                           f"{body.get('kind')} is not {want_kind}")
        if resource == "jobs":
            return self.send_json(201, cluster.create_job(ns, body, dry_run), headers)
        if resource == "pods":
            pod, warning = cluster.create_pod(ns, body, dry_run)
            if warning:
                headers = {"Warning": warnings + [f'299 - "{warning}"']}
            return self.send_json(201, pod, headers)
        if resource == "networkpolicies":
            if dry_run:
                raise ApiError(400, "BadRequest", "fake-kube: dryRun only for pods and jobs")
            return self.send_json(201, cluster.create_policy(ns, body), headers)
        if resource == "services":
            svc = cluster.create_service(ns, body, dry_run)
            return self.send_json(201, svc, headers)
        if resource in ("roles", "rolebindings", "clusterroles", "clusterrolebindings"):
            kube_rbac.validate(resource, body)
            obj = copy.deepcopy(body)
            if ns is not None:
                obj.setdefault("metadata", {})["namespace"] = ns
            if dry_run:
                return self.send_json(201, obj, headers)
            with cluster.store.cond:
                if ns is not None:
                    cluster.require_namespace_locked(ns)
                return self.send_json(201, cluster.store.create_locked(resource, obj), headers)
        if resource == "namespaces":
            with cluster.store.cond:
                obj = copy.deepcopy(body)
                obj.setdefault("status", {"phase": "Active"})
                return self.send_json(201, cluster.store.create_locked("namespaces", obj),
                                      headers)
        raise ApiError(405, "MethodNotAllowed", f"fake-kube does not create {resource}")

    def review(self, method, resource):
        """POST selfsubjectrulesreviews / selfsubjectaccessreviews: answered for the caller from
        the stored RBAC objects (kube_rbac.py), 201 Created, nothing stored."""
        if method != "POST":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on "
                           "the requested resource")
        body = self.body
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was empty or not an object")
        if body.get("kind") not in (None, kube_rbac.REVIEWS[resource]):
            raise ApiError(400, "BadRequest", f"kind {body.get('kind')} is not "
                           f"{kube_rbac.REVIEWS[resource]}")
        store = self.server.cluster.store
        answer = kube_rbac.rules_review if resource == "selfsubjectrulesreviews" else \
            kube_rbac.access_review
        with store.cond:
            return self.send_json(201, answer(store, self.user, body))

    def delete(self, resource, ns, name, query):
        cluster = self.server.cluster
        opts = self.body if isinstance(self.body, dict) else {}
        propagation = query.get("propagationPolicy") or opts.get("propagationPolicy") or "Orphan"
        if propagation not in ("Orphan", "Background", "Foreground"):
            raise ApiError(400, "BadRequest", f'Unsupported value: "{propagation}": supported '
                           'values: "Foreground", "Background", "Orphan"')
        if ns is not None:
            with cluster.store.cond:
                cluster.require_namespace_locked(ns)
        if name is None:
            return self.delete_collection(resource, ns, query, propagation)
        obj = self.delete_named(resource, ns, name, propagation)
        if resource in ("pods", "services") or (resource == "jobs" and
                                                propagation == "Foreground"):
            return self.send_json(200, obj)
        group = GROUPS[resource].split("/")[0] if "/" in GROUPS[resource] else ""
        self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Success", "details": {
                                 "name": name, "group": group, "kind": resource,
                                 "uid": obj["metadata"]["uid"]}})

    def delete_named(self, resource, ns, name, propagation):
        cluster = self.server.cluster
        if resource == "jobs":
            return cluster.delete_job(ns, name, propagation)
        if resource == "pods":
            return cluster.delete_pod(ns, name)
        if resource == "services":
            return cluster.delete_service(ns, name)
        if resource in ("networkpolicies", "roles", "rolebindings", "clusterroles",
                        "clusterrolebindings"):
            with cluster.store.cond:
                obj = cluster.store.delete_locked(resource, ns, name)
                if obj is None:
                    raise not_found(resource, name, GROUPS[resource].split("/")[0])
                return obj
        raise ApiError(405, "MethodNotAllowed", f"fake-kube does not delete {resource}")

    def delete_collection(self, resource, ns, query, propagation):
        if resource not in ("jobs", "pods", "networkpolicies", "services", "roles",
                            "rolebindings", "clusterroles", "clusterrolebindings"):
            raise ApiError(405, "MethodNotAllowed", f"fake-kube: no deletecollection of {resource}")
        lreqs, freqs = self.selectors(resource, query)
        store = self.server.cluster.store
        with store.cond:
            names = [o["metadata"]["name"] for o in store.list_locked(resource, ns, lreqs, freqs)]
        deleted = []
        for name in names:
            try:
                deleted.append(self.delete_named(resource, ns, name, propagation))
            except ApiError as e:
                if e.code != 404:
                    raise
        with store.cond:
            body = store.list_response_locked(resource, deleted)
        self.send_json(200, body)

    def pod_log(self, ns, name, query):
        cluster = self.server.cluster
        with cluster.store.cond:
            cluster.require_namespace_locked(ns)
            pod = cluster.store.get_locked("pods", ns, name)
            if pod is None:
                raise not_found("pods", name)
            names = [c["name"] for c in pod["spec"]["containers"]]
            container = query.get("container") or names[0]
            if container not in names:
                raise ApiError(400, "BadRequest",
                               f"container {container} is not valid for pod {name}")
            path = cluster.log_path_locked(pod)
            if path is None:
                cs = (pod.get("status", {}).get("containerStatuses") or [{}])[0]
                reason = cs.get("state", {}).get("waiting", {}).get("reason", "ContainerCreating")
                raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is '
                               f"waiting to start: {reason}")
        try:
            limit = int(query["limitBytes"]) if "limitBytes" in query else None
        except ValueError:
            raise ApiError(400, "BadRequest", "invalid limitBytes")
        if limit is not None and limit <= 0:
            raise ApiError(422, "Invalid", "PodLogOptions \"\" is invalid: limitBytes: Invalid "
                           "value: must be greater than 0")
        try:
            with open(path, "rb") as f:
                data = f.read(limit if limit is not None else -1)
        except FileNotFoundError:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        if "tailLines" in query:
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[-int(query["tailLines"]):]) if int(query["tailLines"]) else b""
        self.send_text(200, data)

    # -- control endpoints
    def control(self, method, path):
        cluster = self.server.cluster
        if method == "GET" and path == "/fake/state":
            with cluster.store.cond:
                objects = {r: cluster.store.list_locked(r) for r in RESOURCES}
                body = {"resourceVersion": str(cluster.store.rv), "objects": objects,
                        "podNetwork": copy.deepcopy(cluster.pod_network),
                        "settings": settings_json(cluster.settings),
                        "apiRequests": self.server.api_requests,
                        "watches": self.server.watch_count}
                body["serviceAccountTokens"] = {
                    f"{ns}/{name}": dict(kube_rbac.token_fingerprint(token), path=SA_DIR)
                    for token, (ns, name) in cluster.sa_tokens.items()}
            if cluster.docker is not None:
                body["docker"] = cluster.docker.state()
                body["dns_queries"] = body["docker"].pop("dns_queries")
                body["kubelet"] = "docker"
            else:
                body["kubelet"] = "process"
            return self.send_json(200, body)
        if method == "GET" and path == "/fake/containers":
            if cluster.docker is None:
                return self.send_json(200, {"kubelet": "process", "containers": []})
            return self.send_json(200, {"kubelet": "docker",
                                        "containers": cluster.docker.containers()})
        if method == "GET" and path == "/fake/processes":
            return self.send_json(200, {"processes": cluster.running_processes()})
        if method == "GET" and path == "/fake/requests":
            with self.server.counter_lock:
                return self.send_json(200, {"requests": list(self.server.request_log)})
        if method == "POST" and path == "/fake/token":
            # A test's TokenRequest: the bearer token of {"namespace", "serviceAccount"} (the
            # one a pod of that account has mounted). Only this control endpoint returns it.
            body = self.body or {}
            if not body.get("namespace") or not body.get("serviceAccount"):
                return self.send_json(400, status(400, "BadRequest", "namespace and "
                                                  "serviceAccount are required"))
            return self.send_json(200, {"token": cluster.sa_token_for(
                body["namespace"], body["serviceAccount"])})
        if method == "POST" and path == "/fake/script":
            body = self.body or {}
            try:
                with cluster.store.cond:
                    new = dict(cluster.settings)
                    if "network-policy" in body:
                        apply_network_policy(new, body["network-policy"],
                                             cluster.docker is not None)
                        if new["network-policy"] == "enforce" and cluster.netns_prefix is None \
                                and cluster.docker is None:
                            raise ValueError("enforce needs a network namespace tool; none works")
                    if "policy-delay" in body:
                        new["policy-delay"] = float(body["policy-delay"])
                    if "admission" in body:
                        if body["admission"] not in ADMISSION_MODES:
                            raise ValueError(f"unknown admission {body['admission']}")
                        new["admission"] = body["admission"]
                    if "faults" in body:
                        new["faults"] = parse_faults(body["faults"])
                    if "add-faults" in body:
                        merged = parse_faults(body["add-faults"])
                        base = copy.deepcopy(new["faults"])
                        for k, v in merged.items():
                            if isinstance(v, set):
                                base[k] |= v
                            elif isinstance(v, list):
                                base[k] += v
                            elif v:
                                base[k] = v
                        new["faults"] = base
                    cluster.settings.clear()
                    cluster.settings.update(new)
            except (ValueError, TypeError) as e:
                return self.send_json(400, status(400, "BadRequest", str(e)))
            if body.get("compact"):
                cluster.store.compact()
            return self.send_json(200, {"settings": settings_json(cluster.settings)})
        self.send_json(404, status(404, "NotFound", f"no control endpoint {method} {path}"))


# ---------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description="FAKE Kubernetes API server for sandprobe tests")
    ap.add_argument("--kubeconfig-out", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--network-policy", default="enforce")
    ap.add_argument("--policy-delay", type=float, default=0.0)
    ap.add_argument("--nodes", default="fake-node-1")
    ap.add_argument("--admission", default="admit", choices=ADMISSION_MODES)
    ap.add_argument("--runtime-classes", default="gvisor",
                    help="RuntimeClass objects: NAME[=HANDLER],... (handler = docker runtime in "
                         "--kubelet docker mode; default handler = the name)")
    ap.add_argument("--namespaces", default="default,kube-system,sandprobe")
    ap.add_argument("--context-namespace", default="sandprobe")
    ap.add_argument("--auth", default="token", choices=("token", "client-cert"))
    ap.add_argument("--kubeconfig-paths", action="store_true",
                    help="reference CA/cert files by path instead of inline *-data")
    ap.add_argument("--fault", action="append", default=[])
    ap.add_argument("--kubelet", default="process", choices=("process", "docker"))
    ap.add_argument("--infra-image", default="sandprobe-probe:local",
                    help="image of the node and pause containers (docker mode; never pulled)")
    ap.add_argument("--pod-pids-limit", type=int, default=-1)
    ap.add_argument("--cni", default="none", choices=CNIS)
    ap.add_argument("--version-string", default="v1.32.3+k3s1")
    args = ap.parse_args(argv)

    m = re.match(r"v(\d+)\.(\d+)", args.version_string)
    if not m:
        print(f"fake_kube: bad --version-string {args.version_string!r}", file=sys.stderr)
        return 2
    VERSION.update(major=m.group(1), minor=m.group(2), gitVersion=args.version_string)
    docker_mode = args.kubelet == "docker"
    settings = {"network-policy": "enforce", "enforce-on": None, "enforce-after": 0.0,
                "policy-delay": args.policy_delay, "admission": args.admission}
    handlers = {}
    for item in (r for r in args.runtime_classes.split(",") if r):
        name, _, handler = item.partition("=")
        handlers[name] = handler or name
    try:
        apply_network_policy(settings, args.network_policy, docker_mode)
        settings["faults"] = parse_faults(args.fault)
    except ValueError as e:
        print(f"fake_kube: {e}", file=sys.stderr)
        return 2
    state_dir = os.path.abspath(args.state_dir)
    os.makedirs(os.path.join(state_dir, "logs"), exist_ok=True)
    as_root = os.geteuid() == 0
    try:
        netns_prefix = netns_wrapper(as_root)
    except RuntimeError as e:
        netns_prefix = None
        if settings["network-policy"] == "enforce" and not docker_mode:
            print(f"fake_kube: --network-policy enforce impossible: {e}", file=sys.stderr)
            return 2
    become_subreaper()
    instance = secrets.token_hex(4)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    kubelet = None
    node_ips = None
    extra_sans = ()
    if docker_mode:
        import kube_docker
        if not as_root:
            print("fake_kube: --kubelet docker needs root (nsenter, ip, iptables)",
                  file=sys.stderr)
            return 2
        try:
            kube_docker.docker("version", "--format", "{{.Server.Version}}", timeout=30)
            kube_docker.cleanup_stale(lambda msg: print(f"fake_kube: {msg}", file=sys.stderr))
            if not kube_docker.DockerKubelet.image_present(None, args.infra_image):
                raise RuntimeError(f"infra image {args.infra_image} is not present (never "
                                   "pulled)")
            kubelet = kube_docker.DockerKubelet(None, instance, state_dir, args.infra_image,
                                                handlers, args.pod_pids_limit)
            try:
                node_ips = kubelet.start(node_names(args.nodes))
            except BaseException:
                kubelet.shutdown()
                raise
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            print(f"fake_kube: --kubelet docker: {e}", file=sys.stderr)
            return 2
        extra_sans = (f"IP:{kubelet.gateway}",)
    try:
        make_pki(state_dir, extra_sans)
        token = secrets.token_urlsafe(32)
        cluster = Cluster(settings, parse_nodes(args.nodes, node_ips, args.cni),
                          [n for n in args.namespaces.split(",") if n],
                          list(handlers), as_root, netns_prefix, instance, state_dir,
                          handlers, args.cni)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(f"{state_dir}/server.crt", f"{state_dir}/server.key")
        ctx.load_verify_locations(f"{state_dir}/ca.crt")
        ctx.verify_mode = ssl.CERT_OPTIONAL
        server = FakeServer(cluster, ctx, token)
        servers = [server]
        if kubelet is not None:
            import kube_docker
            kubelet.cluster = cluster
            cluster.docker = kubelet
            kubelet.start_dns()
            pods_api = FakeServer(cluster, ctx, token, (kubelet.gateway, 6443))
            # One request log for both listeners: /fake/requests shows what pods asked too.
            pods_api.request_log, pods_api.counter_lock = server.request_log, server.counter_lock
            pods_api.listener = "pod network"
            servers.append(pods_api)
    except BaseException as e:
        if kubelet is not None:
            kubelet.shutdown()
        if isinstance(e, (OSError, RuntimeError, subprocess.SubprocessError)):
            print(f"fake_kube: start failed: {e}", file=sys.stderr)
            return 2
        raise
    port = server.server_address[1]
    cluster.service_port = port
    url = f"https://127.0.0.1:{port}"
    write_kubeconfig(args.kubeconfig_out, url, state_dir, token, args.auth, args.kubeconfig_paths,
                     args.context_namespace)
    for srv in servers:
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                         daemon=True).start()
    print(f"READY {url}", flush=True)
    while not stop.wait(0.5):
        pass
    for srv in servers:
        srv.shutdown()
        srv.server_close()
        srv.hang.set()
    with cluster.store.cond:
        cluster.stopping.set()
        cluster.store.cond.notify_all()
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
