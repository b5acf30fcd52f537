"""Self-test of fake_kube.py --kubelet docker: pods as real containers, real packet filtering.

Needs root, a running dockerd and the image sandprobe-probe:local; FAILS (never skips) when docker
is unreachable. Run from this folder:  python3 -m unittest -v test_fake_kube_docker
Traffic stays on the fake's own internal pod network (its gateway runs the cluster DNS and the
API's second listener); the 169.254.169.254 check only proves there is no route out.
Most tests share one fake (settings changed through POST /fake/script); the SIGTERM test starts
its own.
"""
import json
import os
import re
import subprocess
import time
import unittest
import uuid

from test_fake_kube import FakeKube, wait_for

NS = "sandprobe"
IMAGE = "sandprobe-probe:local"

# What a probe pod checks; prints one JSON line {check: true|"error text"}.
PROBE = r'''
import json, socket, struct, ssl, sys, time, os
T = 1.0
cfg = json.loads(sys.argv[1])
def tcp(host, port):
    s = socket.socket(); s.settimeout(T)
    try:
        s.connect((host, port)); s.sendall(b"ping\n"); d = s.recv(16)
        return True if d.startswith(b"ping") else "connected, bad echo %r" % d
    except OSError as e:
        return "%s: %s" % (type(e).__name__, e)
    finally:
        s.close()
def udp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(T)
    try:
        s.sendto(b"ping", (host, port)); d = s.recv(16)
        return True if d == b"ping" else "bad echo"
    except OSError as e:
        return "%s: %s" % (type(e).__name__, e)
def dns(name, server="10.96.0.10"):
    q = struct.pack(">HHHHHH", 7, 0x100, 1, 0, 0, 0) + b"".join(
        bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(T)
    try:
        s.sendto(q, (server, 53)); d = s.recv(512)
    except OSError as e:
        return "%s: %s" % (type(e).__name__, e)
    if d[3] & 15:
        return "rcode %d" % (d[3] & 15)
    return socket.inet_ntoa(d[-4:]) if struct.unpack(">H", d[6:8])[0] else "no answer"
def api(host):
    ctx = ssl.create_default_context(cafile=cfg["ca"]) if os.path.exists(cfg["ca"]) else \
        ssl._create_unverified_context()
    s = socket.socket(); s.settimeout(T)
    try:
        s.connect((host, 443))
        with ctx.wrap_socket(s, server_hostname="kubernetes.default.svc") as t:
            t.sendall(b"GET /version HTTP/1.1\r\nHost: k\r\nConnection: close\r\n\r\n")
            return True if t.recv(64).startswith(b"HTTP/1.1") else "bad answer"
    except OSError as e:
        return "%s: %s" % (type(e).__name__, e)
def run(prefix):
    out = {}
    ip = cfg.get("echo")
    if ip:
        out["tcp"] = tcp(ip, 8080); out["tcp53"] = tcp(ip, 53); out["udp"] = udp(ip, 8080)
        out["svc"] = tcp(cfg["svc"], 80)
    out["dns"] = dns("echo.sandprobe.svc.cluster.local")
    out["dns_svc"] = out["dns"] == cfg.get("svc")
    name = dns("kubernetes.default.svc.cluster.local")
    out["api_name"] = api(name) if name == "10.96.0.1" else "no address: %s" % name
    out["api_ip"] = api("10.96.0.1")
    out["metadata"] = tcp("169.254.169.254", 80)
    out["ifaces"] = sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])
    print(prefix + json.dumps(out), flush=True)
run("T0 ")
if cfg.get("again"):
    time.sleep(cfg["again"]); run("T1 ")
'''

ECHO = r'''
import socket, threading
def tcp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port)); s.listen(16)
    while True:
        c, _ = s.accept()
        try:
            c.settimeout(2); c.sendall(c.recv(64))
        except OSError:
            pass
        c.close()
def udp(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", port))
    while True:
        d, a = s.recvfrom(64); s.sendto(d, a)
for f, p in ((tcp, 8080), (tcp, 53), (udp, 8080), (udp, 53)):
    threading.Thread(target=f, args=(p,), daemon=True).start()
print("echo ready", flush=True)
threading.Event().wait()
'''

REACH_KEYS = ("tcp", "tcp53", "udp", "svc", "dns_svc", "api_name", "api_ip")


def docker_json(*args):
    p = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {p.stderr}")
    return json.loads(p.stdout)


class DockerKubeletTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        p = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                           capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            raise AssertionError(f"docker is unreachable (this module needs dockerd): {p.stderr}")
        cls.t0 = time.monotonic()
        cls.kube = FakeKube("--kubelet", "docker", "--nodes", "n1,n2", "--runtime-classes",
                            "gvisor=runsc", "--cni", "k3s")
        st = cls.kube.state()
        cls.net = st["docker"]["network"]
        cls.nodes = st["docker"]["nodes"]
        echo = cls.pod("echo", ECHO, labels={"app": "echo"}, node="n1", wait=False)
        cls.echo_ip = wait_for(lambda: cls.kube.ok("GET", f"/api/v1/namespaces/{NS}/pods/echo")[
            "status"].get("podIP") if cls.phase("echo") == "Running" else None, 60,
            what="echo pod Running")
        svc = cls.kube.ok("POST", f"/api/v1/namespaces/{NS}/services", {
            "metadata": {"name": "echo"}, "spec": {"selector": {"app": "echo"}, "ports": [
                {"name": "tcp", "port": 80, "targetPort": 8080},
                {"name": "dns-udp", "port": 53, "protocol": "UDP"},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}})
        cls.svc_ip = svc["spec"]["clusterIP"]
        del echo

    @classmethod
    def tearDownClass(cls):
        rc = cls.kube.stop()
        assert rc == 0, (rc, cls.kube.stderr)

    def setUp(self):
        self.kube.script(**{"network-policy": "enforce", "policy-delay": 0})
        self.kube.ok("DELETE", f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies")

    # ------------------------------------------------------------------ helpers
    @classmethod
    def phase(cls, name):
        st, _, obj = cls.kube.request("GET", f"/api/v1/namespaces/{NS}/pods/{name}")
        return obj.get("status", {}).get("phase") if st == 200 else None

    @classmethod
    def pod(cls, name, script, labels=None, node=None, wait=True, spec=None, container=None,
            argv=None, timeout=90):
        """Creates a bare pod running python3 -c script; with wait, returns (pod, log) once it
        ended (and deletes it)."""
        c = {"name": "probe", "image": IMAGE,
             "command": argv or ["python3", "-u", "-c", script]}
        c.update(container or {})
        body = {"metadata": {"name": name, "labels": labels or {"role": "client"}},
                "spec": {"restartPolicy": "Never", "containers": [c], **(spec or {})}}
        if node:
            body["spec"]["nodeName"] = node
        cls.kube.ok("POST", f"/api/v1/namespaces/{NS}/pods", body)
        if not wait:
            return None
        path = f"/api/v1/namespaces/{NS}/pods/{name}"
        pod = wait_for(lambda: (lambda o: o if o["status"].get("phase") in ("Succeeded",
                                                                            "Failed") else None)(
            cls.kube.ok("GET", path)), timeout, 0.1, f"pod {name} to end")
        _, _, log = cls.kube.request("GET", path + "/log")
        log = log.decode() if isinstance(log, bytes) else json.dumps(log)
        pod["_network"] = cls.kube.state()["podNetwork"].get(f"{NS}/{name}")
        cls.kube.ok("DELETE", path)
        return pod, log

    def probe(self, node=None, again=None, spec=None, labels=None):
        name = "probe-" + uuid.uuid4().hex[:6]
        cfg = {"echo": self.echo_ip, "svc": self.svc_ip, "again": again,
               "ca": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"}
        pod, log = self.pod(name, None, node=node, spec=spec, labels=labels,
                            argv=["python3", "-u", "-c", PROBE, json.dumps(cfg)])
        lines = {ln[:2]: json.loads(ln[3:]) for ln in log.splitlines()
                 if ln[:3] in ("T0 ", "T1 ")}
        self.assertIn("T0", lines, f"probe output: {log!r} status {pod['status']}")
        for r in lines.values():
            self.assertIsNot(r["metadata"], True, "169.254.169.254 reachable from a pod")
        return (lines if again else lines["T0"]), pod

    def policy(self, name, egress=None, ingress=None, types=("Egress",), selector=None):
        spec = {"podSelector": selector if selector is not None else
                {"matchLabels": {"role": "client"}}, "policyTypes": list(types)}
        if egress is not None:
            spec["egress"] = egress
        if ingress is not None:
            spec["ingress"] = ingress
        self.kube.ok("POST", f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies",
                     {"metadata": {"name": name}, "spec": spec})

    def assertReach(self, result, expect):
        got = {k: result[k] is True for k in expect}
        self.assertEqual(got, expect, json.dumps(result, indent=1))

    # ------------------------------------------------------------------ network matrix
    def test_01_no_policy_all_reach(self):
        r, pod = self.probe()
        self.assertReach(r, {k: True for k in REACH_KEYS})
        self.assertEqual(r["ifaces"], ["eth0", "lo"])
        self.assertEqual(pod["status"]["hostIP"], self.nodes["n1"]["ip"])
        self.assertNotEqual(pod["status"]["podIP"], pod["status"]["hostIP"])
        self.assertTrue(pod["status"]["podIP"].startswith(self.net["subnet"].rsplit(".", 1)[0]))
        q = [e for e in self.kube.state()["dns_queries"]
             if e["client"] == pod["status"]["podIP"]]
        self.assertTrue(any(e["qname"] == "echo.sandprobe.svc.cluster.local" and
                            e["answer"] == self.svc_ip for e in q), q)

    def test_02_deny_all_egress(self):
        self.policy("deny-all", egress=[])
        r, pod = self.probe()
        self.assertReach(r, {k: False for k in REACH_KEYS})
        self.assertEqual(r["ifaces"], ["eth0", "lo"])  # filtered, never unplugged
        # Silent drops, as CNIs do: a denied UDP datagram vanishes (no EPERM from sendto).
        self.assertIn("timed out", r["udp"])
        self.assertIn("timed out", r["tcp"])
        net = pod["_network"]
        self.assertTrue(net["filtered"])
        self.assertEqual(net["policies"], ["deny-all"])
        self.assertIn("Egress: everything else DROPPED (isolated by deny-all)", net["rules"])

    def test_03_ignore_mode(self):
        self.kube.script(**{"network-policy": "ignore"})
        self.policy("deny-all", egress=[])
        r, pod = self.probe()
        self.assertReach(r, {k: True for k in REACH_KEYS})
        self.assertFalse(pod["_network"]["filtered"])

    def test_04_allow_dns_ports_to_any(self):
        self.policy("deny-all", egress=[])
        self.policy("allow-53", egress=[{"ports": [{"protocol": "UDP", "port": 53},
                                                   {"protocol": "TCP", "port": 53}]}])
        r, _ = self.probe()
        self.assertReach(r, {"tcp": False, "tcp53": True, "udp": False, "svc": False,
                             "dns_svc": True, "api_name": False, "api_ip": False})

    def test_05_ipblock_with_except(self):
        self.policy("cidr", egress=[{"to": [{"ipBlock": {
            "cidr": self.net["subnet"], "except": [f"{self.echo_ip}/32"]}}]}])
        r, _ = self.probe()
        self.assertReach(r, {"tcp": False, "tcp53": False, "udp": False, "svc": False,
                             "dns_svc": True, "api_name": True, "api_ip": True})

    def test_06_pod_selector_peer(self):
        self.policy("to-echo", egress=[{"to": [{"podSelector": {"matchLabels": {"app": "echo"}}}],
                                        "ports": [{"port": 8080}]}])
        r, _ = self.probe()
        self.assertReach(r, {"tcp": True, "tcp53": False, "udp": False, "svc": True,
                             "dns_svc": False, "api_name": False, "api_ip": False})

    def test_07_dns_to_kube_system(self):
        self.policy("dns", egress=[{"to": [{
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "ports": [{"protocol": "UDP", "port": 53}]}])
        r, _ = self.probe()
        self.assertReach(r, {"tcp": False, "tcp53": False, "udp": False, "svc": False,
                             "dns_svc": True, "api_ip": False})

    def test_08_enforce_on_one_node(self):
        self.kube.script(**{"network-policy": "enforce-on=n1"})
        self.policy("deny-all", egress=[])
        r1, p1 = self.probe(node="n1")
        r2, p2 = self.probe(node="n2")
        self.assertReach(r1, {"tcp": False, "dns_svc": False})
        self.assertReach(r2, {"tcp": True, "dns_svc": True})
        self.assertEqual(p2["status"]["hostIP"], self.nodes["n2"]["ip"])
        self.assertIn("does not enforce", p2["_network"]["why"])

    def test_09_enforce_after(self):
        self.kube.script(**{"network-policy": "enforce-after=2"})
        self.policy("deny-all", egress=[])
        lines, _ = self.probe(again=3.5)
        self.assertReach(lines["T0"], {"tcp": True, "dns_svc": True})
        self.assertReach(lines["T1"], {"tcp": False, "dns_svc": False})

    def test_09b_policy_delay(self):
        # A policy counts only once it is S seconds old (late programming of NEW policies).
        self.kube.script(**{"policy-delay": 2.5})
        self.policy("deny-all", egress=[])
        lines, _ = self.probe(again=4)
        self.assertReach(lines["T0"], {"tcp": True})
        self.assertReach(lines["T1"], {"tcp": False, "dns_svc": False})

    def test_10_host_network_pod_unfiltered(self):
        self.policy("deny-all", egress=[], selector={})
        r, pod = self.probe(spec={"hostNetwork": True})
        self.assertReach(r, {"tcp": True, "svc": True, "dns_svc": True, "api_ip": True})
        self.assertEqual(pod["status"]["podIP"], self.nodes["n1"]["ip"])
        self.assertEqual(pod["status"]["podIP"], pod["status"]["hostIP"])
        self.assertFalse(pod["_network"]["filtered"])

    def test_11_ingress_deny_on_target(self):
        # A policy selecting the echo pod for Ingress (no rules) isolates it; egress open.
        self.policy("echo-ingress", ingress=[], types=("Ingress",),
                    selector={"matchLabels": {"app": "echo"}})
        r, _ = self.probe()
        self.assertReach(r, {"tcp": False, "svc": False, "dns_svc": True, "api_ip": True})

    # ------------------------------------------------------------------ kubelet mapping
    def test_20_oom_killed(self):
        pod, _ = self.pod("oom", "b = bytearray(300 << 20)\nimport time; time.sleep(5)",
                          container={"resources": {"limits": {"memory": "32Mi"}}})
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual((term["reason"], term["exitCode"]), ("OOMKilled", 137))
        self.assertEqual(pod["status"]["phase"], "Failed")

    def test_20b_sigkill_without_oom_is_error(self):
        # 137 is SIGKILL, not OOM: with no OOM event from the runtime the fake waits for one
        # (kube_oom.LATE_OOM_WAIT_S) and then says Error, as a kubelet would.
        kill = "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'; exit $?"
        pod, _ = self.pod("sigkill", None, argv=["sh", "-c", kill],
                          container={"resources": {"limits": {"memory": "32Mi"}}})
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual((term["reason"], term["exitCode"]), ("Error", 137))

    def test_21_emptydir_size_limit_evicts(self):
        pod, log = self.pod("fill", "import time\nprint('WROTE', flush=True)\n"
                            "open('/cache/f','wb').write(b'x' * (4 << 20))\ntime.sleep(20)",
                            spec={"volumes": [{"name": "cache",
                                               "emptyDir": {"sizeLimit": "1Mi"}}]},
                            container={"volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                                       "securityContext": {"runAsUser": 65534}})
        st = pod["status"]
        self.assertEqual((st["phase"], st.get("reason")), ("Failed", "Evicted"), st)
        self.assertEqual(st["message"], 'Usage of EmptyDir volume "cache" exceeds the limit "1Mi".')
        self.assertEqual(log, "")  # the kubelet removed the container and its log
        _, _, ev = self.kube.request("GET", f"/api/v1/namespaces/{NS}/events?fieldSelector="
                                     "involvedObject.name%3Dfill")
        self.assertIn("Evicted", [e["reason"] for e in ev["items"]])

    def test_22_read_only_root(self):
        script = ("import errno\ntry:\n open('/x','w').write('1'); print('WROTE')\n"
                  "except OSError as e:\n print(errno.errorcode[e.errno])")
        _, log = self.pod("ro", script, container={"securityContext": {
            "readOnlyRootFilesystem": True}})
        self.assertEqual(log.strip(), "EROFS")
        _, log = self.pod("rw", script, container={"securityContext": {
            "readOnlyRootFilesystem": False}})
        self.assertEqual(log.strip(), "WROTE")

    def test_23_service_account_token(self):
        script = ("import os\np='/var/run/secrets/kubernetes.io/serviceaccount'\n"
                  "print(sorted(os.listdir(p)) if os.path.isdir(p) else 'ABSENT')\n"
                  "print(len(open(p+'/token').read()) if os.path.isdir(p) else 0)")
        _, log = self.pod("sa", script)
        fp = self.kube.state()["serviceAccountTokens"][f"{NS}/default"]
        self.assertEqual(log.split(), ["['ca.crt',", "'namespace',", "'token']",
                                       str(fp["length"])])
        _, log = self.pod("nosa", script, spec={"automountServiceAccountToken": False})
        self.assertEqual(log.split(), ["ABSENT", "0"])

    def test_23b_token_accepted_by_api_from_pod_and_authorized_by_rbac(self):
        script = ("import json, ssl, urllib.error, urllib.request\n"
                  "p = '/var/run/secrets/kubernetes.io/serviceaccount/'\n"
                  "ctx = ssl.create_default_context(cafile=p + 'ca.crt')\n"
                  "req = urllib.request.Request('https://kubernetes.default.svc/api/v1/namespaces/'"
                  " + open(p + 'namespace').read() + '/pods', headers={'Authorization': "
                  "'Bearer ' + open(p + 'token').read()})\n"
                  "try:\n"
                  "    print(json.load(urllib.request.urlopen(req, context=ctx, timeout=10))"
                  "['kind'])\n"
                  "except urllib.error.HTTPError as e:\n"
                  "    print(e.code, json.load(e)['message'])")
        # The account is authenticated (403, not 401) and RBAC gives it no pods until bound.
        _, log = self.pod("api", script, spec={"serviceAccountName": "lister"})
        self.assertEqual(log.strip(), '403 pods is forbidden: User "system:serviceaccount:'
                         f'{NS}:lister" cannot list resource "pods" in API group "" in the '
                         f'namespace "{NS}"')
        rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings"
        self.kube.ok("POST", rbac, {
            "metadata": {"name": "lister-views"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "lister", "namespace": NS}]})
        try:
            _, log = self.pod("api2", script, spec={"serviceAccountName": "lister"})
        finally:
            self.kube.ok("DELETE", rbac + "/lister-views")
        self.assertEqual(log.strip(), "PodList")

    def test_23c_job_like_the_driver_submits(self):
        body = {"metadata": {"name": "drv-job", "labels": {"sandprobe.io/run": "r1"}},
                "spec": {"backoffLimit": 0, "activeDeadlineSeconds": 60, "template": {
                    "metadata": {"labels": {"sandprobe.io/run": "r1"}},
                    "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False,
                             "enableServiceLinks": False,
                             "securityContext": {"runAsNonRoot": True, "runAsUser": 65534,
                                                 "runAsGroup": 65534,
                                                 "seccompProfile": {"type": "RuntimeDefault"}},
                             "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}],
                             "containers": [{
                                 "name": "probe", "image": IMAGE,
                                 "command": ["timeout", "-k", "2", "20", "python3", "-u", "-c",
                                             "import os; open('/tmp/x','w').write('1'); "
                                             "print('uid', os.getuid(), os.getgid())"],
                                 "securityContext": {"allowPrivilegeEscalation": False,
                                                     "readOnlyRootFilesystem": True,
                                                     "capabilities": {"drop": ["ALL"]}},
                                 "resources": {"limits": {"memory": "128Mi", "cpu": "500m"}},
                                 "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}]}]}}}}
        self.kube.ok("POST", f"/apis/batch/v1/namespaces/{NS}/jobs", body)
        job = wait_for(lambda: (lambda j: j if any(c["type"] in ("Complete", "Failed") for c in
                                                   j["status"].get("conditions", [])) else None)(
            self.kube.ok("GET", f"/apis/batch/v1/namespaces/{NS}/jobs/drv-job")), 60)
        self.assertIn("Complete", [c["type"] for c in job["status"]["conditions"]], job)
        pods = self.kube.ok("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector=job-name%3D"
                            "drv-job")["items"]
        _, _, log = self.kube.request("GET", f"/api/v1/namespaces/{NS}/pods/"
                                      f"{pods[0]['metadata']['name']}/log?container=probe")
        self.assertEqual(log.decode().strip(), "uid 65534 65534")
        self.kube.ok("DELETE", f"/apis/batch/v1/namespaces/{NS}/jobs/drv-job"
                     "?propagationPolicy=Background")

    def test_23e_termination_message_is_the_files_last_4k(self):
        # The kubelet's terminationMessagePath: a file the (non-root, read-only-root) container
        # can write; its last 4 KiB become state.terminated.message. pods/log still carries
        # stdout and stderr in one stream.
        script = ("import os, sys; print('out'); sys.stderr.write('err\\n'); sys.stderr.flush(); "
                  "f = open('/dev/termination-log', 'w'); f.write('a' * 5000 + 'tail'); f.close(); "
                  "sys.exit(3)")
        sc = {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534}
        pod, log = self.pod("termlog", script, spec={"securityContext": sc},
                            container={"securityContext": {"readOnlyRootFilesystem": True}})
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual(term["exitCode"], 3)
        self.assertEqual(len(term["message"]), 4096)
        self.assertTrue(term["message"].endswith("a" * 4092 + "tail"))
        # Both streams, in either order; docker's attach may even split a write of one stream
        # around the other's (seen once: "outerr" then the newline), as trap 44 expects.
        self.assertEqual(sorted(re.findall(r"out|err", log)), ["err", "out"], log)
        # Policy FallbackToLogsOnError with an empty file after a failure: the log's tail.
        pod, _ = self.pod("termfall", "print('last words'); raise SystemExit(1)",
                          container={"terminationMessagePolicy": "FallbackToLogsOnError"})
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual(term["message"].strip(), "last words")
        pod, _ = self.pod("termnone", "print('ok')")
        self.assertNotIn("message", pod["status"]["containerStatuses"][0]["state"]["terminated"])

    def test_23d_run_as_non_root_refuses_root_image(self):
        self.kube.ok("POST", f"/api/v1/namespaces/{NS}/pods", {
            "metadata": {"name": "rootimg"}, "spec": {
                "restartPolicy": "Never", "securityContext": {"runAsNonRoot": True},
                "containers": [{"name": "probe", "image": IMAGE, "command": ["true"]}]}})
        pod = wait_for(lambda: (lambda o: o if (o["status"].get("containerStatuses") or [
            {"state": {}}])[0]["state"].get("waiting", {}).get("reason") not in (
            None, "ContainerCreating") else None)(
            self.kube.ok("GET", f"/api/v1/namespaces/{NS}/pods/rootimg")), 30)
        w = pod["status"]["containerStatuses"][0]["state"]["waiting"]
        self.assertEqual(w["reason"], "CreateContainerConfigError")
        self.assertIn("container has runAsNonRoot and image will run as root", w["message"])
        self.kube.ok("DELETE", f"/api/v1/namespaces/{NS}/pods/rootimg")

    def test_24_runtime_class_gvisor(self):
        self.policy("deny-all", egress=[])
        name = "gv-" + uuid.uuid4().hex[:4]
        self.pod(name, "import time\nprint(open('/proc/version').read().strip())\ntime.sleep(2)",
                 spec={"runtimeClassName": "gvisor"}, wait=False)
        cname = wait_for(lambda: [c["name"] for c in self.kube.ok("GET", "/fake/containers")[
            "containers"] if c["name"].endswith("-app") and c["pod"] == f"{NS}/{name}"], 60,
            what="gvisor app container")
        info = docker_json("inspect", cname[0])[0]
        self.assertEqual(info["HostConfig"]["Runtime"], "runsc")
        pod = wait_for(lambda: (lambda o: o if o["status"]["phase"] in ("Succeeded", "Failed")
                                else None)(self.kube.ok("GET", f"/api/v1/namespaces/{NS}/pods/"
                                                              f"{name}")), 60)
        net = self.kube.state()["podNetwork"][f"{NS}/{name}"]
        self.assertIn("runtimeNote", net)
        _, _, log = self.kube.request("GET", f"/api/v1/namespaces/{NS}/pods/{name}/log")
        self.assertNotIn("Debian", log.decode())  # gVisor's /proc/version, not the host kernel's
        self.assertEqual(pod["status"]["phase"], "Succeeded")
        self.kube.ok("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}")
        # Under deny-all a gVisor pod reaches nothing (here: it has no eth0 at all, see docs).
        r, _ = self.probe(spec={"runtimeClassName": "gvisor"})
        self.assertReach(r, {k: False for k in REACH_KEYS})

    def test_25_missing_image_never_pulled(self):
        self.kube.ok("POST", f"/api/v1/namespaces/{NS}/pods", {
            "metadata": {"name": "noimg"}, "spec": {"restartPolicy": "Never", "containers": [
                {"name": "probe", "image": "sandprobe-no-such-image:none", "command": ["true"]}]}})
        pod = wait_for(lambda: (lambda o: o if "waiting" in (o["status"].get(
            "containerStatuses") or [{"state": {}}])[0]["state"] and o["status"][
            "containerStatuses"][0]["state"]["waiting"]["reason"] != "ContainerCreating"
            else None)(self.kube.ok("GET", f"/api/v1/namespaces/{NS}/pods/noimg")), 30)
        self.assertEqual(pod["status"]["phase"], "Pending")
        self.assertEqual(pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
                         "ErrImageNeverPull")
        self.kube.ok("DELETE", f"/api/v1/namespaces/{NS}/pods/noimg")

    def test_26_active_deadline(self):
        pod, _ = self.pod("dl", "import time; time.sleep(30)",
                          spec={"activeDeadlineSeconds": 1})
        self.assertEqual((pod["status"]["phase"], pod["status"].get("reason")),
                         ("Failed", "DeadlineExceeded"))

    def test_27_services_api(self):
        st, _, obj = self.kube.request("POST", f"/api/v1/namespaces/{NS}/services", {
            "metadata": {"name": "bad"}, "spec": {"ports": [{"port": 70000}]}})
        self.assertEqual((st, obj["reason"]), (422, "Invalid"))
        lst = self.kube.ok("GET", "/api/v1/namespaces/kube-system/services")
        self.assertEqual([(s["metadata"]["name"], s["spec"]["clusterIP"]) for s in lst["items"]],
                         [("kube-dns", "10.96.0.10")])
        self.assertEqual(self.kube.ok("GET", "/apis/node.k8s.io/v1/runtimeclasses/gvisor")[
            "handler"], "runsc")
        node = self.kube.ok("GET", "/api/v1/nodes/n2")
        self.assertEqual(node["status"]["addresses"][0]["address"], self.nodes["n2"]["ip"])
        self.assertIn("k3s.io/node-args", node["metadata"]["annotations"])

    def test_28_containers_are_labelled(self):
        names = [c["name"] for c in self.kube.ok("GET", "/fake/containers")["containers"]]
        self.assertTrue(any(n.endswith("-node-n1") for n in names), names)
        self.assertTrue(any(n.endswith("-pause") for n in names), names)  # the echo pod


    def test_29_pod_deleted_while_its_containers_are_made(self):
        # A Pod deleted while its pause container is being made (sandprobe's Ctrl-C during the
        # in-cluster canary's start) leaves no container behind. Found by
        # ci/bench/reliability.d/interrupts: a pause container outlived its deleted Pod.
        names = ["gone-%d-%s" % (i, uuid.uuid4().hex[:4]) for i in range(6)]
        for i, name in enumerate(names):
            self.pod(name, "import time; time.sleep(60)", node="n1", wait=False)
            time.sleep(0.15 * i)  # 0 .. 0.75 s: before, during and after the pause container
            self.kube.ok("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}")

        def left():
            cs = self.kube.ok("GET", "/fake/containers")["containers"]
            gone = {f"{NS}/{n}" for n in names}
            return [(c["name"], c["state"]) for c in cs if c["pod"] in gone]
        time.sleep(3)
        try:
            wait_for(lambda: left() == [], 60, 0.5, "containers of deleted pods to go")
        except AssertionError:
            raise AssertionError("containers of deleted pods left: %s" % left())


class DockerShutdownTest(unittest.TestCase):
    def test_sigterm_removes_everything(self):
        kube = FakeKube("--kubelet", "docker", "--nodes", "a1")
        inst = kube.state()["docker"]["network"]["name"].split("fake-kube-", 1)[1]
        kube.ok("POST", f"/api/v1/namespaces/{NS}/pods", {
            "metadata": {"name": "sleeper"}, "spec": {"restartPolicy": "Never", "containers": [
                {"name": "probe", "image": IMAGE, "command": ["sleep", "300"]}]}})
        wait_for(lambda: kube.ok("GET", f"/api/v1/namespaces/{NS}/pods/sleeper")["status"].get(
            "phase") == "Running", 60)
        self.assertGreaterEqual(len(kube.ok("GET", "/fake/containers")["containers"]), 3)
        self.assertEqual(kube.stop(), 0)
        label = f"label=io.sandprobe.fake-kube={inst}"
        left = subprocess.run(["docker", "ps", "-aq", "--filter", label], capture_output=True,
                              text=True, timeout=30).stdout.split()
        nets = subprocess.run(["docker", "network", "ls", "-q", "--filter", label],
                              capture_output=True, text=True, timeout=30).stdout.split()
        self.assertEqual((left, nets), ([], []))
        rules = subprocess.run(["iptables", "-w", "20", "-S"], capture_output=True, text=True,
                               timeout=60).stdout
        self.assertNotIn(f"FKE-{inst}", rules)

    def test_sigkill_leftovers_removed_by_next_start(self):
        kube = FakeKube("--kubelet", "docker", "--nodes", "k1")
        inst = kube.state()["docker"]["network"]["name"].split("fake-kube-", 1)[1]
        kube.proc.kill()  # SIGKILL: nothing is cleaned up ...
        kube.proc.wait()
        label = f"label=io.sandprobe.fake-kube={inst}"
        ps = ["docker", "ps", "-aq", "--filter", label]
        self.assertTrue(subprocess.run(ps, capture_output=True, text=True,
                                       timeout=30).stdout.split())
        kube.stop()
        second = FakeKube("--kubelet", "docker", "--nodes", "k2")  # ... until the next start
        try:
            self.assertEqual(subprocess.run(ps, capture_output=True, text=True,
                                            timeout=30).stdout.split(), [])
            self.assertNotIn(f"FKE-{inst}", subprocess.run(
                ["iptables", "-w", "20", "-S"], capture_output=True, text=True,
                timeout=60).stdout)
        finally:
            self.assertEqual(second.stop(), 0)


if __name__ == "__main__":
    unittest.main()
