"""Self-test of the FAKE Kubernetes API server (fake_kube.py): a real server process, plain HTTPS.

Every request goes to the fake on 127.0.0.1 over TLS verified with the CA it generated; pods'
network traffic targets only a TCP listener this test opens on 127.0.0.1. Run from this folder:
  python3 -m unittest -v test_fake_kube
Most tests share one server (settings changed through POST /fake/script); the shutdown test and
the client-cert test start their own.
"""
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
NS = "sandprobe"
NODES = "fake-node-1,fake-node-2,fake-node-3:unschedulable,fake-node-4:tainted"


def wait_for(fn, timeout=10.0, interval=0.05, what="condition"):
    """Polls fn() until it returns a truthy value; fails the test after timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class FakeKube:
    """A running fake_kube.py process and an HTTPS client for it."""

    def __init__(self, *args, auth="token", as_nobody=False):
        self.dir = tempfile.TemporaryDirectory(prefix="fake-kube-test-")
        d = self.dir.name
        prefix = []
        if as_nobody:  # run the fake itself as uid 65534 (the non-root code paths)
            os.chown(d, 65534, 65534)
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        self.proc = subprocess.Popen(
            prefix + ["/usr/bin/python3", os.path.join(HERE, "fake_kube.py"), "--kubeconfig-out",
             f"{d}/kubeconfig", "--state-dir", d, "--auth", auth, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("READY https://127.0.0.1:"):
            self.proc.kill()
            raise AssertionError(f"fake did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.token = None
        with open(f"{d}/kubeconfig") as f:
            for kline in f:
                if kline.strip().startswith("token:"):
                    self.token = kline.split(":", 1)[1].strip()
        self.ctx = ssl.create_default_context(cafile=f"{d}/ca.crt")
        if auth == "client-cert":
            self.ctx.load_cert_chain(f"{d}/client.crt", f"{d}/client.key")

    def conn(self, timeout=10, ctx=None):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=ctx or self.ctx,
                                           timeout=timeout)

    def request(self, method, path, body=None, token=True, timeout=10, ctx=None, raw=None):
        """-> (status, headers dict, parsed JSON or bytes). `raw`: the body's JSON text as is (a
        repeated key, which json.dumps cannot write). headers["warnings"]: every Warning."""
        headers = {"Accept": "application/json"}
        if token is True and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        elif isinstance(token, str):
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None or raw is not None:
            data = raw.encode() if raw is not None else json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        c = self.conn(timeout, ctx)
        try:
            c.request(method, path, data, headers)
            r = c.getresponse()
            raw = r.read()
            hdrs = {k.lower(): v for k, v in r.getheaders()}
            hdrs["warnings"] = r.msg.get_all("Warning") or []
        finally:
            c.close()
        if hdrs.get("content-type", "").startswith("application/json"):
            return r.status, hdrs, json.loads(raw)
        return r.status, hdrs, raw

    def ok(self, method, path, body=None, expect=(200, 201)):
        status, _, obj = self.request(method, path, body)
        if status not in expect:
            raise AssertionError(f"{method} {path} -> {status} {obj}")
        return obj

    def watch(self, path, timeout=15):
        """Yields WatchEvent dicts of a watch stream until it ends (raises if it is cut)."""
        c = self.conn(timeout)
        c.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
        r = c.getresponse()
        assert r.status == 200, (r.status, r.read())
        try:
            while True:
                line = r.readline()
                if not line:
                    return
                yield json.loads(line)
        finally:
            c.close()

    def raw_watch(self, path, timeout=15):
        """-> (events, ended_cleanly): reads the chunked stream by hand, so a cut connection
        (no terminating zero-length chunk) is told apart from a clean end (http.client's
        readline hides the difference)."""
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        with self.ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                      f"{self.token}\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                try:
                    part = s.recv(65536)
                except (ssl.SSLError, ConnectionError):
                    break
                if not part:
                    break
                data += part
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"chunked" in head.lower(), head
        payload, clean = b"", False
        while body:
            size_line, sep, rest = body.partition(b"\r\n")
            if not sep:
                break
            size = int(size_line, 16)
            if size == 0:
                clean = rest.startswith(b"\r\n")
                break
            if len(rest) < size + 2:
                break
            payload += rest[:size]
            body = rest[size + 2:]
        events = [json.loads(line) for line in payload.splitlines() if line.strip()]
        return events, clean

    def script(self, **settings):
        body = {k.replace("_", "-"): v for k, v in settings.items()}
        status, _, obj = self.request("POST", "/fake/script", body, token=False)
        assert status == 200, obj
        return obj

    def state(self):
        return self.ok("GET", "/fake/state")

    def processes(self):
        return self.ok("GET", "/fake/processes")["processes"]

    def stop(self):
        """SIGTERM; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = "hung on SIGTERM"
        self.proc.stdout.close()
        self.stderr = self.proc.stderr.read()
        self.proc.stderr.close()
        self.dir.cleanup()
        return rc


def job_body(name, script, labels=None, deadline=None, memory=None, ttl=None, node=None,
             node_selector=None, runtime_class=None, timeout_s=20):
    """A Job shaped like the one the driver submits (contract: 'Job the driver submits')."""
    labels = dict(labels or {})
    pod_spec = {
        "restartPolicy": "Never", "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "probe", "image": "probe@sha256:" + "0" * 64,
            "command": ["timeout", "-k", "2", str(timeout_s), "python3", "-u", "-c", script],
            "securityContext": {"allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]}},
            "resources": {"limits": {"memory": memory}} if memory else {}}]}
    if node:
        pod_spec["nodeName"] = node
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    if runtime_class:
        pod_spec["runtimeClassName"] = runtime_class
    spec = {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": pod_spec}}
    if deadline:
        spec["activeDeadlineSeconds"] = deadline
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": labels}, "spec": spec}


JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
PODS = f"/api/v1/namespaces/{NS}/pods"
POLICIES = f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies"


def q(**params):
    return "?" + urllib.parse.urlencode(params)


class Canary:
    """TCP listener on 127.0.0.1 that answers each connection with a nonce (server-side proof)."""

    def __init__(self):
        self.nonce = uuid.uuid4().hex[:12]
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            c.sendall(self.nonce.encode())
            c.close()

    def script(self):
        return ("import socket, errno\ns = socket.socket(); s.settimeout(3)\ntry:\n"
                f"    s.connect(('127.0.0.1', {self.port}))\n"
                "    print('REACHED', s.recv(64).decode())\n"
                "except OSError as e:\n    print('BLOCKED', errno.errorcode.get(e.errno, e))\n")

    def close(self):
        self.sock.close()


class SharedServerTest(unittest.TestCase):
    """One fake for most tests; each test restores the settings it changes."""

    @classmethod
    def setUpClass(cls):
        cls.kube = FakeKube("--nodes", NODES, "--network-policy", "enforce")

    @classmethod
    def tearDownClass(cls):
        pids = [p for ps in cls.kube.processes().values() for p in ps]
        rc = cls.kube.stop()
        assert rc == 0, (rc, cls.kube.stderr)
        assert "Traceback" not in cls.kube.stderr, cls.kube.stderr
        time.sleep(0.1)
        for pid in pids:
            assert not _alive(pid), f"pid {pid} survived the fake's SIGTERM"

    def setUp(self):
        self.kube.script(faults=[], network_policy="enforce", policy_delay=0, admission="admit")
        self.run_id = "t" + uuid.uuid4().hex[:8]

    # -- helpers
    def create_job(self, name, script, **kw):
        kw.setdefault("labels", {})
        kw["labels"].setdefault("sandprobe.io/run", self.run_id)
        return self.kube.ok("POST", JOBS, job_body(name, script, **kw))

    def job(self, name):
        return self.kube.ok("GET", f"{JOBS}/{name}")

    def finished(self, name, timeout=10):
        def done():
            conds = self.job(name)["status"].get("conditions", [])
            return [c for c in conds if c["type"] in ("Complete", "Failed")]
        return wait_for(done, timeout, what=f"job {name} to finish")[0]

    def pod_of(self, name):
        items = self.kube.ok("GET", PODS + q(labelSelector=f"job-name={name}"))["items"]
        return items[0] if items else None

    def logs(self, pod_name, **params):
        return self.kube.request("GET", f"{PODS}/{pod_name}/log" + q(container="probe", **params))

    def run_job(self, name, script, **kw):
        """Creates a Job, waits for its end; -> (finished condition, pod, log text)."""
        self.create_job(name, script, **kw)
        cond = self.finished(name)
        pod = self.pod_of(name)
        status, _, text = self.logs(pod["metadata"]["name"])
        self.assertEqual(status, 200, text)
        return cond, pod, text.decode()

    # -- lifecycle
    def test_job_lifecycle_to_succeeded_with_logs(self):
        cond, pod, text = self.run_job(
            "life", "import os, sys\nprint('out', os.getuid(), flush=True)\n"
                    "print('err', file=sys.stderr, flush=True)\nprint(os.environ['HOME'], "
                    "os.environ['KUBERNETES_SERVICE_HOST'], os.environ['KUBERNETES_SERVICE_PORT'])")
        self.assertEqual((cond["type"], cond["reason"]), ("Complete", "CompletionsReached"))
        job = self.job("life")
        self.assertEqual(job["status"]["succeeded"], 1)
        self.assertIn("completionTime", job["status"])
        self.assertEqual(pod["status"]["phase"], "Succeeded")
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual((term["exitCode"], term["reason"]), (0, "Completed"))
        labels = pod["metadata"]["labels"]
        uid = job["metadata"]["uid"]
        self.assertEqual(labels["job-name"], "life")
        self.assertEqual(labels["batch.kubernetes.io/controller-uid"], uid)
        self.assertEqual(labels["sandprobe.io/run"], self.run_id)
        self.assertEqual(pod["metadata"]["ownerReferences"][0]["uid"], uid)
        self.assertTrue(pod["metadata"]["name"].startswith("life-"))
        self.assertEqual(pod["spec"]["nodeName"], "fake-node-1")
        expected_uid = 65534 if os.geteuid() == 0 else os.geteuid()
        self.assertIn(f"out {expected_uid}\n", text)
        self.assertIn("err\n", text)
        self.assertIn(f"/tmp 127.0.0.1 {self.kube.port}", text)
        status, _, part = self.logs(pod["metadata"]["name"], limitBytes=3)
        self.assertEqual((status, part), (200, b"out"))
        events = self.kube.ok("GET", f"/api/v1/namespaces/{NS}/events" +
                              q(fieldSelector="involvedObject.name=life"))["items"]
        self.assertIn("SuccessfulCreate", [e["reason"] for e in events])
        self.assertTrue(all(e["involvedObject"]["name"] == "life" for e in events))

    def test_logs_400_before_start_and_404_for_missing_pod(self):
        # A pod pinned to a node that does not exist is never started (stays Pending).
        self.create_job("nostart", "print(1)", node="no-such-node")
        pod = wait_for(lambda: self.pod_of("nostart"), what="pod")
        status, _, body = self.logs(pod["metadata"]["name"])
        self.assertEqual(status, 400, body)
        self.assertIn("is waiting to start", body["message"])
        status, _, body = self.logs("no-such-pod")
        self.assertEqual((status, body["reason"]), (404, "NotFound"))
        status, _, body = self.kube.request("GET", f"{JOBS}/no-such-job")
        self.assertEqual((status, body["kind"], body["code"]), (404, "Status", 404))
        self.kube.ok("DELETE", f"{JOBS}/nostart" + q(propagationPolicy="Background"))

    def test_scheduling_skips_unschedulable_and_tainted_nodes(self):
        self.create_job("sched-any", "print(1)", node_selector={})
        self.create_job("sched-bad", "print(1)",
                        node_selector={"kubernetes.io/hostname": "fake-node-3"})
        self.create_job("sched-two", "print(1)",
                        node_selector={"kubernetes.io/hostname": "fake-node-2"})
        self.finished("sched-any")
        self.finished("sched-two")
        self.assertEqual(self.pod_of("sched-two")["spec"]["nodeName"], "fake-node-2")
        bad = wait_for(lambda: (self.pod_of("sched-bad") or {}).get("status", {}).get(
            "conditions"), what="unschedulable condition")
        self.assertEqual((bad[0]["type"], bad[0]["status"], bad[0]["reason"]),
                         ("PodScheduled", "False", "Unschedulable"))
        nodes = self.kube.ok("GET", "/api/v1/nodes")
        self.assertEqual(nodes["kind"], "NodeList")
        by_name = {n["metadata"]["name"]: n for n in nodes["items"]}
        self.assertTrue(by_name["fake-node-3"]["spec"]["unschedulable"])
        self.assertEqual(by_name["fake-node-4"]["spec"]["taints"][0]["effect"], "NoSchedule")
        one = self.kube.ok("GET", "/api/v1/nodes" +
                           q(labelSelector="kubernetes.io/hostname=fake-node-2"))["items"]
        self.assertEqual([n["metadata"]["name"] for n in one], ["fake-node-2"])
        self.kube.ok("DELETE", JOBS + q(labelSelector=f"sandprobe.io/run={self.run_id}",
                                        propagationPolicy="Background"))

    def test_validation_conflict_and_namespace_errors(self):
        body = job_body("Bad_Name", "print(1)")
        status, _, obj = self.kube.request("POST", JOBS, body)
        self.assertEqual((status, obj["reason"]), (422, "Invalid"))
        self.assertIn("metadata.name", obj["message"])
        body = job_body("norestart", "print(1)")
        body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
        status, _, obj = self.kube.request("POST", JOBS, body)
        self.assertEqual(status, 422)
        self.assertIn("spec.template.spec.restartPolicy", obj["details"]["causes"][0]["field"])
        self.create_job("twice", "print(1)")
        status, _, obj = self.kube.request("POST", JOBS, job_body("twice", "print(1)"))
        self.assertEqual((status, obj["reason"]), (409, "AlreadyExists"))
        status, _, obj = self.kube.request("GET", "/api/v1/namespaces/nope")
        self.assertEqual(status, 404)
        status, _, obj = self.kube.request("POST", "/apis/batch/v1/namespaces/nope/jobs",
                                           job_body("x", "print(1)"))
        self.assertEqual((status, obj["message"]), (404, 'namespaces "nope" not found'))
        self.finished("twice")

    # -- watch
    def test_watch_sees_added_and_modified_to_succeeded(self):
        rv = self.kube.ok("GET", PODS + q(labelSelector="job-name=watched"))["metadata"][
            "resourceVersion"]
        self.create_job("watched", "print('hello')")
        seen = []
        path = PODS + q(labelSelector="job-name=watched", watch=1, resourceVersion=rv,
                        timeoutSeconds=10, allowWatchBookmarks="true")
        for ev in self.kube.watch(path):
            if ev["type"] == "BOOKMARK":
                continue
            seen.append(ev)
            if ev["object"]["status"].get("phase") == "Succeeded":
                break
        self.assertEqual(seen[0]["type"], "ADDED")
        self.assertEqual(seen[0]["object"]["status"]["phase"], "Pending")
        self.assertTrue(all(e["type"] == "MODIFIED" for e in seen[1:]), seen)
        self.assertIn("Running", [e["object"]["status"].get("phase") for e in seen])
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in seen]
        self.assertEqual(rvs, sorted(rvs))
        self.assertGreater(rvs[0], int(rv))
        self.assertEqual(seen[-1]["object"]["status"]["containerStatuses"][0]["state"][
            "terminated"]["exitCode"], 0)

    def test_watch_timeout_and_bookmarks_only_when_allowed(self):
        rv = self.kube.ok("GET", PODS)["metadata"]["resourceVersion"]
        start = time.monotonic()
        events = list(self.kube.watch(PODS + q(labelSelector="job-name=none", watch=1,
                                               resourceVersion=rv, timeoutSeconds=1)))
        self.assertEqual(events, [])  # ended cleanly (terminating chunk), nothing sent
        self.assertLess(time.monotonic() - start, 3)
        events = list(self.kube.watch(PODS + q(labelSelector="job-name=none", watch=1,
                                               resourceVersion=rv, timeoutSeconds=2,
                                               allowWatchBookmarks="true")))
        self.assertTrue(events and all(e["type"] == "BOOKMARK" for e in events), events)

    def test_410_expired_then_resume_from_a_list(self):
        old = self.kube.ok("GET", PODS)["metadata"]["resourceVersion"]
        self.create_job("gone1", "print(1)")
        self.finished("gone1")
        self.kube.script(compact=True)
        events = list(self.kube.watch(PODS + q(watch=1, resourceVersion=old, timeoutSeconds=5)))
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0]["type"], "ERROR")
        st = events[0]["object"]
        self.assertEqual((st["kind"], st["code"], st["reason"]), ("Status", 410, "Expired"))
        # Re-list, then watch from the list's resourceVersion: works and sees new changes.
        fresh = self.kube.ok("GET", PODS + q(labelSelector="job-name=gone2"))
        self.create_job("gone2", "print(2)")
        for ev in self.kube.watch(PODS + q(labelSelector="job-name=gone2", watch=1,
                                           resourceVersion=fresh["metadata"]["resourceVersion"],
                                           timeoutSeconds=10)):
            self.assertIn(ev["type"], ("ADDED", "MODIFIED"))
            if ev["object"]["status"].get("phase") == "Succeeded":
                break
        else:
            self.fail("resumed watch ended before Succeeded")
        # The scripted fault: the next watch answers 410 whatever its resourceVersion.
        self.kube.script(faults=["watch-gone"])
        rv = self.kube.ok("GET", PODS)["metadata"]["resourceVersion"]
        events = list(self.kube.watch(PODS + q(watch=1, resourceVersion=rv, timeoutSeconds=1)))
        self.assertEqual([(e["type"], e["object"]["code"]) for e in events], [("ERROR", 410)])
        self.assertEqual(list(self.kube.watch(PODS + q(watch=1, resourceVersion=rv,
                                                       timeoutSeconds=1))), [])

    def test_watch_break_mid_stream(self):
        self.create_job("brk", "print(1)")
        self.finished("brk")
        path = PODS + q(labelSelector=f"sandprobe.io/run={self.run_id}", watch=1,
                        timeoutSeconds=1)
        events, clean = self.kube.raw_watch(path)
        self.assertEqual(([e["type"] for e in events], clean), (["ADDED"], True))
        self.kube.script(faults=["watch-break-after=1"])
        self.create_job("brk2", "print(1)")
        self.finished("brk2")
        start = time.monotonic()
        events, clean = self.kube.raw_watch(path.replace("timeoutSeconds=1", "timeoutSeconds=5"))
        self.assertEqual(([e["type"] for e in events], clean), (["ADDED"], False))
        self.assertLess(time.monotonic() - start, 3)

    # -- back-pressure and auth
    def test_429_with_retry_after(self):
        self.kube.script(faults=["429=/jobs$:2"])
        for _ in range(2):
            status, hdrs, obj = self.kube.request("POST", JOBS, job_body("limited", "print(1)"))
            self.assertEqual((status, obj["reason"], hdrs.get("retry-after")),
                             (429, "TooManyRequests", "1"))
        status, _, obj = self.kube.request("POST", JOBS, job_body("limited", "print(1)"))
        self.assertEqual(status, 201, obj)
        self.finished("limited")

    def test_quota_403_exceeded_quota(self):
        count = len(self.kube.ok("GET", JOBS)["items"])
        self.kube.script(faults=[f"quota-jobs={count}"])
        status, _, obj = self.kube.request("POST", JOBS, job_body("overquota", "print(1)"))
        self.assertEqual((status, obj["reason"]), (403, "Forbidden"))
        self.assertIn("exceeded quota", obj["message"])
        self.kube.script(faults=[f"quota-jobs={count + 1}"])
        self.create_job("underquota", "print(1)")
        self.finished("underquota")

    def test_401_without_or_with_wrong_token(self):
        status, _, obj = self.kube.request("GET", "/version", token=False)
        self.assertEqual((status, obj["kind"], obj["reason"]), (401, "Status", "Unauthorized"))
        status, _, obj = self.kube.request("GET", f"/api/v1/namespaces/{NS}", token="wrong")
        self.assertEqual(status, 401)
        status, _, obj = self.kube.request("GET", f"/api/v1/namespaces/{NS}")
        self.assertEqual((status, obj["kind"]), (200, "Namespace"))

    def test_hang_after_n_requests(self):
        n = self.kube.state()["apiRequests"]
        self.kube.script(faults=[f"hang-after={n + 1}"])
        status, _, _ = self.kube.request("GET", "/version")  # request n+1 is still answered
        self.assertEqual(status, 200)
        start = time.monotonic()
        with self.assertRaises((TimeoutError, socket.timeout)):
            self.kube.request("GET", "/version", timeout=1)
        self.assertGreaterEqual(time.monotonic() - start, 0.9)
        self.kube.script(faults=[])
        self.assertEqual(self.kube.request("GET", "/version")[0], 200)

    # -- deadlines, OOM, faults on pods
    def test_active_deadline_kills_and_deletes_pod(self):
        self.create_job("slow", "import time\nprint('started', flush=True)\ntime.sleep(30)",
                        deadline=1)
        pod = wait_for(lambda: (p := self.pod_of("slow")) and p["status"].get("phase") ==
                       "Running" and p, what="running pod")
        name = pod["metadata"]["name"]
        cond = self.finished("slow", timeout=5)
        self.assertEqual((cond["type"], cond["reason"]), ("Failed", "DeadlineExceeded"))
        self.assertEqual(self.job("slow")["status"]["failed"], 1)
        self.assertEqual(self.kube.request("GET", f"{PODS}/{name}")[0], 404)
        self.assertEqual(self.logs(name)[0], 404)
        self.assertNotIn(f"{NS}/{name}", self.kube.processes())

    def test_oom_by_rss_watcher(self):
        script = ("import time\nchunks = []\nfor i in range(40):\n"
                  "    chunks.append(b'x' * (8 << 20))\n"
                  "    print('allocated', (i + 1) * 8, 'MiB', flush=True)\n    time.sleep(0.03)\n"
                  "print('survived')\n")
        cond, pod, text = self.run_job("balloon", script, memory="64Mi")
        self.assertEqual((cond["type"], cond["reason"]), ("Failed", "BackoffLimitExceeded"))
        term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual((term["reason"], term["exitCode"]), ("OOMKilled", 137))
        self.assertEqual(pod["status"]["phase"], "Failed")
        self.assertIn("allocated 8 MiB", text)
        self.assertNotIn("survived", text)
        # A small allocation under the same limit is not killed.
        cond, pod, text = self.run_job("small", "x = b'x' * (8 << 20)\nprint('fine')",
                                       memory="64Mi")
        self.assertEqual(cond["type"], "Complete")

    def test_scripted_oom_evict_and_failed_create(self):
        self.kube.script(faults=["oom=res.fake-oom", "evict=res.fake-evict",
                                 "pod-fails-create=plat.fake-fail"])
        sleep = "import time\ntime.sleep(10)"
        self.create_job("f-oom", sleep, labels={"sandprobe.io/probe": "res.fake-oom"})
        # A fast process still ends Evicted: the fault decides how the pod ends.
        self.create_job("f-evict", "print('quick')",
                        labels={"sandprobe.io/probe": "res.fake-evict"})
        self.create_job("f-fail", sleep, labels={"sandprobe.io/probe": "plat.fake-fail"},
                        deadline=2)
        self.create_job("f-rc", sleep, runtime_class="kata-missing", deadline=2)
        self.finished("f-oom")
        self.finished("f-evict")
        term = self.pod_of("f-oom")["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual((term["reason"], term["exitCode"]), ("OOMKilled", 137))
        evicted = self.pod_of("f-evict")["status"]
        self.assertEqual((evicted["phase"], evicted["reason"]), ("Failed", "Evicted"))
        for name, text in (("f-fail", "denied the request"), ("f-rc", 'RuntimeClass "kata-missing"'
                                                                      " not found")):
            events = self.kube.ok("GET", f"/api/v1/namespaces/{NS}/events" +
                                  q(fieldSelector=f"involvedObject.name={name}"))["items"]
            failed = [e for e in events if e["reason"] == "FailedCreate"]
            self.assertEqual(len(failed), 1, events)
            self.assertEqual(failed[0]["type"], "Warning")
            self.assertIn(text, failed[0]["message"])
            self.assertIsNone(self.pod_of(name))
        cond = self.finished("f-fail", timeout=5)
        self.assertEqual(cond["reason"], "DeadlineExceeded")

    def test_ttl_after_finished_deletes_job_and_pod(self):
        self.create_job("ttl", "print(1)", ttl=1)
        self.finished("ttl")
        self.assertIsNotNone(self.pod_of("ttl"))
        wait_for(lambda: self.kube.request("GET", f"{JOBS}/ttl")[0] == 404, 5, what="ttl")
        self.assertIsNone(self.pod_of("ttl"))

    # -- network policy
    def policy(self, name, selector, egress=None):
        body = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": name, "labels": {"sandprobe.io/run": self.run_id}},
                "spec": {"podSelector": {"matchLabels": selector}, "policyTypes": ["Egress"],
                         "egress": egress or []}}
        return self.kube.ok("POST", POLICIES, body)

    def reach(self, canary, jobs):
        """Runs Jobs in parallel: {name: labels or (labels, node)} -> {name: first log line}."""
        for name, spec in jobs.items():
            labels, node = spec if isinstance(spec, tuple) else (spec, None)
            self.create_job(name, canary.script(), labels=dict(labels), node=node)
        out = {}
        for name in jobs:
            self.finished(name)
            pod = self.pod_of(name)
            out[name] = self.logs(pod["metadata"]["name"])[2].decode().strip()
        return out

    def test_enforce_vs_ignore_and_policies_add_up(self):
        canary = Canary()
        self.addCleanup(canary.close)
        blocked = {"sandprobe.io/arm": "blocked-" + self.run_id}
        self.policy(f"deny-{self.run_id}", blocked)
        got = self.reach(canary, {"n-control": {"sandprobe.io/arm": "control"},
                                  "n-blocked": blocked})
        self.assertEqual(got["n-control"], f"REACHED {canary.nonce}")
        self.assertEqual(got["n-blocked"], "BLOCKED ENETUNREACH")
        self.kube.script(network_policy="ignore")  # the k3s --disable-network-policy case
        got = self.reach(canary, {"n-ignored": blocked})
        self.assertEqual(got["n-ignored"], f"REACHED {canary.nonce}")
        self.kube.script(network_policy="enforce")
        self.policy(f"allow-{self.run_id}", blocked, egress=[{}])  # a second policy reopens
        got = self.reach(canary, {"n-reopened": blocked})
        self.assertEqual(got["n-reopened"], f"REACHED {canary.nonce}")
        self.kube.ok("DELETE", f"{POLICIES}/allow-{self.run_id}")
        got = self.reach(canary, {"n-closed": blocked})
        self.assertEqual(got["n-closed"], "BLOCKED ENETUNREACH")
        state = self.kube.state()
        self.assertTrue(state["podNetwork"][f"{NS}/{self.pod_of('n-closed')['metadata']['name']}"]
                        ["denied"])
        self.kube.ok("DELETE", POLICIES + q(labelSelector=f"sandprobe.io/run={self.run_id}"))
        self.assertEqual(self.kube.ok("GET", POLICIES + q(
            labelSelector=f"sandprobe.io/run={self.run_id}"))["items"], [])

    def test_enforcement_per_node(self):
        canary = Canary()
        self.addCleanup(canary.close)
        self.kube.script(network_policy="enforce-on=fake-node-1")
        blocked = {"sandprobe.io/arm": "pernode-" + self.run_id}
        self.policy(f"deny-{self.run_id}", blocked)
        got = self.reach(canary, {"pn-1": (blocked, "fake-node-1"),
                                  "pn-2": (blocked, "fake-node-2")})
        self.assertEqual(got["pn-1"], "BLOCKED ENETUNREACH")
        self.assertEqual(got["pn-2"], f"REACHED {canary.nonce}")
        self.kube.ok("DELETE", f"{POLICIES}/deny-{self.run_id}")

    def test_policy_delay(self):
        canary = Canary()
        self.addCleanup(canary.close)
        self.kube.script(policy_delay=1.5)
        blocked = {"sandprobe.io/arm": "delay-" + self.run_id}
        created = time.monotonic()
        pol = self.policy(f"deny-{self.run_id}", blocked)
        self.assertRegex(pol["metadata"]["creationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        got = self.reach(canary, {"d-young": blocked})
        self.assertLess(time.monotonic() - created, 1.5, "too slow to test the young policy")
        self.assertEqual(got["d-young"], f"REACHED {canary.nonce}")
        time.sleep(max(0.0, 1.6 - (time.monotonic() - created)))
        got = self.reach(canary, {"d-aged": blocked})
        self.assertEqual(got["d-aged"], "BLOCKED ENETUNREACH")
        self.kube.ok("DELETE", f"{POLICIES}/deny-{self.run_id}")

    # -- admission
    def test_admission_modes_for_dry_run_pods(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "adm-" + self.run_id},
               "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "probe", "image": "probe", "command": ["true"]}]}}
        path = PODS + q(dryRun="All")
        expected = {"admit": (201, None), "warn": (201, None),
                    "webhook-403": (403, 'admission webhook "'),
                    "psa-403": (403, 'violates PodSecurity "restricted:latest"'),
                    "vap-422": (422, "ValidatingAdmissionPolicy 'require-runtime-class'")}
        for mode, (code, text) in expected.items():
            self.kube.script(admission=mode)
            status, hdrs, obj = self.kube.request("POST", path, pod)
            self.assertEqual(status, code, (mode, obj))
            if code == 201:
                self.assertEqual(obj["kind"], "Pod")
                self.assertEqual(hdrs.get("warning", "").startswith('299 - "'), mode == "warn",
                                 (mode, hdrs))
            else:
                self.assertEqual(obj["kind"], "Status")
                self.assertEqual(obj["reason"], "Forbidden" if code == 403 else "Invalid")
                self.assertIn(text, obj["message"])
        self.assertNotIn(pod["metadata"]["name"],
                         [p["metadata"]["name"] for p in self.kube.state()["objects"]["pods"]])
        # A pod that sets a known runtimeClassName is admitted by the same policy.
        pod["spec"]["runtimeClassName"] = "gvisor"
        self.assertEqual(self.kube.request("POST", path, pod)[0], 201)
        self.kube.script(faults=["quota-pods=0"], admission="admit")
        status, _, obj = self.kube.request("POST", path, pod)
        self.assertEqual(status, 403)
        self.assertIn("exceeded quota", obj["message"])

    def test_many_jobs_at_once(self):
        names = [f"par-{i}" for i in range(8)]
        errors = []

        def submit(n):
            try:
                self.create_job(n, f"import time\ntime.sleep(0.3)\nprint('{n}')")
            except AssertionError as e:
                errors.append(e)
        threads = [threading.Thread(target=submit, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for n in names:
            self.assertEqual(self.finished(n)["type"], "Complete")
            self.assertEqual(self.logs(self.pod_of(n)["metadata"]["name"])[2], f"{n}\n".encode())
        rvs = [int(self.job(n)["metadata"]["resourceVersion"]) for n in names]
        self.assertEqual(len(set(rvs)), len(rvs))
        self.kube.ok("DELETE", JOBS + q(labelSelector=f"sandprobe.io/run={self.run_id}",
                                        propagationPolicy="Foreground"))
        self.assertEqual(self.kube.ok("GET", PODS + q(
            labelSelector=f"sandprobe.io/run={self.run_id}"))["items"], [])

    def test_bare_pod_is_admitted_and_run(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "bare-" + self.run_id, "labels": {"sandprobe.io/run": self.run_id}},
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "probe", "image": "probe", "command": ["python3", "-c", "print(42)"]}]}}
        self.kube.script(admission="webhook-403")
        status, _, obj = self.kube.request("POST", PODS, pod)  # admission applies without dryRun
        self.assertEqual(status, 403, obj)
        self.kube.script(admission="admit")
        self.kube.ok("POST", PODS, pod)
        name = pod["metadata"]["name"]
        wait_for(lambda: self.kube.ok("GET", f"{PODS}/{name}")["status"].get("phase") ==
                 "Succeeded", what="bare pod")
        self.assertEqual(self.logs(name)[2], b"42\n")
        obj = self.kube.ok("DELETE", f"{PODS}/{name}")
        self.assertEqual((obj["kind"], obj["metadata"]["name"]), ("Pod", name))
        self.assertIn("deletionTimestamp", obj["metadata"])
        self.assertEqual(self.kube.request("GET", f"{PODS}/{name}")[0], 404)
        log = self.kube.ok("GET", "/fake/requests")["requests"]
        mine = [(r["method"], r["status"]) for r in log if name in r["path"]]
        self.assertEqual(mine[-2:], [("DELETE", 200), ("GET", 404)])

    # -- deletion
    def test_deletecollection_by_label_kills_processes(self):
        sleep = "import time\ntime.sleep(30)"
        other = "u" + uuid.uuid4().hex[:8]
        self.create_job("dc-a", sleep)
        self.create_job("dc-b", sleep)
        self.create_job("dc-c", sleep, labels={"sandprobe.io/run": other})
        pods = {n: wait_for(lambda n=n: (p := self.pod_of(n)) and p["status"].get("phase") ==
                            "Running" and p["metadata"]["name"], what=n)
                for n in ("dc-a", "dc-b", "dc-c")}
        procs = self.kube.processes()
        pids = [p for n in ("dc-a", "dc-b") for p in procs[f"{NS}/{pods[n]}"]]
        self.assertTrue(pids)
        obj = self.kube.ok("DELETE", JOBS + q(labelSelector=f"sandprobe.io/run={self.run_id}",
                                              propagationPolicy="Background"))
        self.assertEqual(obj["kind"], "JobList")
        self.assertEqual(sorted(j["metadata"]["name"] for j in obj["items"]), ["dc-a", "dc-b"])
        left = self.kube.ok("GET", PODS + q(labelSelector=f"sandprobe.io/run={self.run_id}"))
        self.assertEqual(left["items"], [])
        for pid in pids:
            self.assertFalse(_alive(pid), pid)
        self.assertIn(f"{NS}/{pods['dc-c']}", self.kube.processes())
        # Orphan (the batch/v1 REST default) leaves the pod; the pod deletecollection removes it.
        self.kube.ok("DELETE", f"{JOBS}/dc-c")
        self.assertEqual(len(self.kube.ok("GET", PODS + q(
            labelSelector=f"sandprobe.io/run={other}"))["items"]), 1)
        self.kube.ok("DELETE", PODS + q(labelSelector=f"sandprobe.io/run={other}"))
        self.assertNotIn(f"{NS}/{pods['dc-c']}", self.kube.processes())
        state = self.kube.state()["objects"]
        for res in ("jobs", "pods"):
            self.assertFalse([o for o in state[res] if o["metadata"]["labels"].get(
                "sandprobe.io/run") in (self.run_id, other)], res)


def _alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def _escaped(kube):
    """The pod's pids once its grandchild runs in its own session, reparented to the fake
    (out of the pod's process tree and session: docs/traps.md, trap 16), else None."""
    procs = kube.processes()
    if len(procs) != 1:
        return None
    (pids,) = procs.values()
    try:
        stats = {p: _stat(p) for p in pids}
    except OSError:
        return None
    sessions = {st[3] for st in stats.values()}  # [state, ppid, pgrp, session, ...]
    reparented = [p for p, st in stats.items() if int(st[1]) == kube.proc.pid]
    return pids if len(sessions) >= 2 and reparented else None


ESCAPE = ("import os, time, sys\nprint('parent', flush=True)\n"
          "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
          "        time.sleep(60)\n        os._exit(0)\n    os._exit(0)\ntime.sleep(60)\n")


class OwnServerTest(unittest.TestCase):
    def test_sigterm_kills_setsid_escapees_and_exits_0(self):
        kube = FakeKube()
        try:
            kube.ok("POST", JOBS, job_body("esc", ESCAPE))
            pids = wait_for(lambda: _escaped(kube), what="a setsid grandchild")
        finally:
            rc = kube.stop()
        self.assertEqual(rc, 0, kube.stderr)
        time.sleep(0.1)
        self.assertEqual([p for p in pids if _alive(p)], [])

    def test_pod_delete_kills_setsid_escapees(self):
        kube = FakeKube()
        try:
            kube.ok("POST", JOBS, job_body("esc", ESCAPE))
            pids = wait_for(lambda: _escaped(kube), what="a setsid grandchild")
            (pod,) = kube.processes()
            kube.ok("DELETE", f"{PODS}/{pod.split('/')[1]}")
            self.assertEqual(kube.processes(), {})
            self.assertEqual([p for p in pids if _alive(p)], [])
            self.assertEqual(kube.ok("GET", f"{JOBS}/esc")["status"]["conditions"][-1]["type"],
                             "Failed")
        finally:
            self.assertEqual(kube.stop(), 0)

    def test_enforce_when_the_fake_is_not_root(self):
        # CI runs as root: start the fake as uid 65534 to cover the non-root netns path too.
        kube = FakeKube("--network-policy", "enforce", as_nobody=os.geteuid() == 0)
        canary = Canary()
        try:
            kube.ok("POST", POLICIES, {"metadata": {"name": "deny"}, "spec": {
                "podSelector": {"matchLabels": {"arm": "blocked"}}, "policyTypes": ["Egress"]}})
            for name, arm in (("nr-blocked", "blocked"), ("nr-control", "control")):
                kube.ok("POST", JOBS, job_body(name, canary.script(), labels={"arm": arm}))
            out = {}
            for name in ("nr-blocked", "nr-control"):
                wait_for(lambda: [c for c in kube.ok("GET", f"{JOBS}/{name}")["status"].get(
                    "conditions", []) if c["type"] == "Complete"], what=name)
                pod = kube.ok("GET", PODS + q(labelSelector=f"job-name={name}"))["items"][0]
                status, _, text = kube.request("GET", f"{PODS}/{pod['metadata']['name']}/log")
                out[name] = text.decode().strip()
            self.assertEqual(out, {"nr-blocked": "BLOCKED ENETUNREACH",
                                   "nr-control": f"REACHED {canary.nonce}"})
        finally:
            canary.close()
            self.assertEqual(kube.stop(), 0, kube.stderr)

    def test_client_certificate_auth(self):
        kube = FakeKube(auth="client-cert")
        try:
            self.assertIsNone(kube.token)
            status, _, obj = kube.request("GET", "/version")
            self.assertEqual((status, obj["major"]), (200, "1"))
            bare = ssl.create_default_context(cafile=f"{kube.dir.name}/ca.crt")
            status, _, obj = kube.request("GET", "/version", ctx=bare)
            self.assertEqual((status, obj["reason"]), (401, "Unauthorized"))
        finally:
            self.assertEqual(kube.stop(), 0)

    def test_enforce_fails_loudly_without_a_netns_tool(self):
        # PATH without unshare/bwrap: enforce mode must refuse to start (exit 2, a message).
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, PATH=d)
            p = subprocess.run([sys.executable if os.path.isabs(sys.executable) else
                                "/usr/bin/python3", os.path.join(HERE, "fake_kube.py"),
                                "--kubeconfig-out", f"{d}/kc", "--state-dir", d],
                               env=env, capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("network namespace", p.stderr)
            self.assertNotIn("READY", p.stdout)


class FieldValidationTest(unittest.TestCase):
    """Server-side field validation of creates (kube_schema.py): ?fieldValidation=Strict answers
    unknown and duplicate fields with the real server's 400 Status; Warn (the default) and Ignore
    create the object without them."""

    @classmethod
    def setUpClass(cls):
        cls.kube = FakeKube()

    @classmethod
    def tearDownClass(cls):
        assert cls.kube.stop() == 0, cls.kube.stderr

    def typo_job(self, name, key="containerz"):
        body = job_body(name, "print(1)")
        body["spec"]["template"]["spec"][key] = []
        return body

    def test_strict_unknown_field_is_400_bad_request_and_nothing_is_stored(self):
        for dry in (True, False):
            path = JOBS + (q(dryRun="All", fieldValidation="Strict") if dry else
                           q(fieldValidation="Strict"))
            status, _, obj = self.kube.request("POST", path, self.typo_job("typo"))
            self.assertEqual((status, obj["kind"], obj["status"], obj["reason"], obj["code"]),
                             (400, "Status", "Failure", "BadRequest", 400), obj)
            self.assertEqual(obj["message"], 'Job in version "v1" cannot be handled as a Job: '
                             'strict decoding error: unknown field "spec.template.spec.containerz"')
            self.assertEqual(self.kube.request("GET", f"{JOBS}/typo")[0], 404)

    def test_strict_names_every_problem_in_order_with_list_indexes_and_case(self):
        body = self.typo_job("many", "RestartPolicy")
        body["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
        body["metadata"]["lables"] = {}
        status, _, obj = self.kube.request("POST", JOBS + q(fieldValidation="Strict"), body)
        self.assertEqual(status, 400, obj)
        self.assertEqual(obj["message"].split("strict decoding error: ")[1],
                         'unknown field "metadata.lables", '
                         'unknown field "spec.template.spec.containers[0].securityContex", '
                         'unknown field "spec.template.spec.RestartPolicy"')

    def test_strict_duplicate_field_is_400(self):
        raw = json.dumps(job_body("dup", "print(1)")).replace(
            '"restartPolicy": "Never"', '"restartPolicy": "Never", "restartPolicy": "Always"')
        status, _, obj = self.kube.request("POST", JOBS + q(fieldValidation="Strict",
                                                            dryRun="All"), raw=raw)
        self.assertEqual((status, obj["reason"]), (400, "BadRequest"), obj)
        self.assertEqual(obj["message"], 'Job in version "v1" cannot be handled as a Job: '
                         'strict decoding error: duplicate field '
                         '"spec.template.spec.restartPolicy"')
        # Warn: created, the last value kept (a Job whose pods restart Always is then invalid).
        status, hdrs, obj = self.kube.request("POST", JOBS + q(dryRun="All"), raw=raw)
        self.assertEqual((status, obj["reason"]), (422, "Invalid"), obj)

    def test_strict_applies_to_pods_services_and_policies(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicyy": "Never"}]}}
        status, _, obj = self.kube.request("POST", PODS + q(dryRun="All",
                                                            fieldValidation="Strict"), pod)
        self.assertEqual((status, obj["message"]), (400, 'Pod in version "v1" cannot be handled '
                         'as a Pod: strict decoding error: unknown field '
                         '"spec.containers[0].imagePullPolicyy"'))
        svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "targetport": 80}]}}
        status, _, obj = self.kube.request(
            "POST", f"/api/v1/namespaces/{NS}/services" + q(fieldValidation="Strict"), svc)
        self.assertEqual((status, obj["message"].split(": ", 1)[1]),
                         (400, 'strict decoding error: unknown field "spec.ports[0].targetport"'))
        pol = {"metadata": {"name": "np"}, "spec": {"podSelector": {"matchLabel": {}}}}
        status, _, obj = self.kube.request("POST", POLICIES + q(fieldValidation="Strict"), pol)
        self.assertEqual((status, obj["message"]), (400, 'NetworkPolicy in version "v1" cannot be '
                         'handled as a NetworkPolicy: strict decoding error: unknown field '
                         '"spec.podSelector.matchLabel"'))

    def test_warn_is_the_default_a_header_per_field_and_the_field_dropped(self):
        body = self.typo_job("warned")
        body["spec"]["templat"] = {}
        for params in ({}, {"fieldValidation": "Warn"}):
            status, hdrs, obj = self.kube.request("POST", JOBS + q(dryRun="All", **params), body)
            self.assertEqual(status, 201, obj)
            self.assertEqual(hdrs["warnings"], [
                '299 - "unknown field \\"spec.template.spec.containerz\\""',
                '299 - "unknown field \\"spec.templat\\""'])
            self.assertNotIn("containerz", obj["spec"]["template"]["spec"])
            self.assertNotIn("templat", obj["spec"])

    def test_ignore_creates_the_object_without_the_field_silently(self):
        status, hdrs, obj = self.kube.request("POST", JOBS + q(fieldValidation="Ignore"),
                                              self.typo_job("ignored"))
        self.assertEqual((status, hdrs["warnings"]), (201, []), obj)
        stored = self.kube.ok("GET", f"{JOBS}/ignored")
        self.assertNotIn("containerz", stored["spec"]["template"]["spec"])
        self.assertEqual(stored["spec"]["template"]["spec"]["containers"][0]["name"], "probe")
        self.kube.ok("DELETE", f"{JOBS}/ignored" + q(propagationPolicy="Background"))

    def test_a_valid_object_passes_strict_and_an_unknown_directive_is_422(self):
        status, hdrs, obj = self.kube.request(
            "POST", JOBS + q(dryRun="All", fieldValidation="Strict"), job_body("ok", "print(1)"))
        self.assertEqual((status, hdrs["warnings"]), (201, []), obj)
        status, _, obj = self.kube.request("POST", JOBS + q(fieldValidation="strict"),
                                           job_body("x", "print(1)"))
        self.assertEqual((status, obj["reason"]), (422, "Invalid"), obj)
        self.assertIn('fieldValidation: Unsupported value: "strict"', obj["message"])

    def test_a_server_older_than_1_25_ignores_the_parameter(self):
        old = FakeKube("--version-string", "v1.24.17")
        try:
            status, hdrs, obj = old.request("POST", JOBS + q(dryRun="All",
                                                             fieldValidation="Strict"),
                                            self.typo_job("old"))
            self.assertEqual((status, hdrs["warnings"]), (201, []), obj)
            self.assertNotIn("containerz", obj["spec"]["template"]["spec"])
        finally:
            self.assertEqual(old.stop(), 0, old.stderr)


class DiscoveryAndServicesTest(unittest.TestCase):
    """Cluster-shape endpoints the product reads (process kubelet; no pods run here)."""

    @classmethod
    def setUpClass(cls):
        cls.kube = FakeKube("--cni", "flannel", "--version-string", "v1.30.2+k3s2",
                            "--runtime-classes", "gvisor=runsc,kata",
                            "--fault", "forbid=/api/v1/namespaces/sandprobe/events")

    @classmethod
    def tearDownClass(cls):
        assert cls.kube.stop() == 0

    def test_version_string(self):
        v = self.kube.ok("GET", "/version")
        self.assertEqual((v["gitVersion"], v["major"], v["minor"]), ("v1.30.2+k3s2", "1", "30"))

    def test_networking_discovery_and_all_namespace_policies(self):
        res = self.kube.ok("GET", "/apis/networking.k8s.io/v1")
        self.assertEqual(res["kind"], "APIResourceList")
        self.assertIn("networkpolicies", [r["name"] for r in res["resources"]])
        self.kube.ok("POST", f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies",
                     {"metadata": {"name": "np-all-ns"}, "spec": {"podSelector": {}}})
        items = self.kube.ok("GET", "/apis/networking.k8s.io/v1/networkpolicies")["items"]
        self.assertIn(("sandprobe", "np-all-ns"),
                      [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in items])

    def test_cni_shape(self):
        node = self.kube.ok("GET", "/api/v1/nodes/fake-node-1")
        self.assertEqual(node["metadata"]["annotations"][
            "flannel.alpha.coreos.com/backend-type"], "vxlan")
        ds = self.kube.ok("GET", "/apis/apps/v1/namespaces/kube-system/daemonsets")
        self.assertEqual([d["metadata"]["name"] for d in ds["items"]], ["kube-flannel-ds"])

    def test_runtime_classes(self):
        rcs = self.kube.ok("GET", "/apis/node.k8s.io/v1/runtimeclasses")["items"]
        self.assertEqual({r["metadata"]["name"]: r["handler"] for r in rcs},
                         {"gvisor": "runsc", "kata": "kata"})
        st, _, obj = self.kube.request("GET", "/apis/node.k8s.io/v1/runtimeclasses/nope")
        self.assertEqual(st, 404)

    def test_forbid_fault(self):
        st, _, obj = self.kube.request("GET", f"/api/v1/namespaces/{NS}/events")
        self.assertEqual((st, obj["reason"]), (403, "Forbidden"))
        self.assertEqual(obj["message"], 'events is forbidden: User "system:serviceaccount:'
                         'sandprobe:sandprobe" cannot list resource "events" in API group "" in '
                         'the namespace "sandprobe"')
        self.kube.ok("GET", f"/api/v1/namespaces/{NS}/pods")  # other paths unaffected

    def test_services(self):
        base = f"/api/v1/namespaces/{NS}/services"
        svc = self.kube.ok("POST", base, {"metadata": {"name": "web", "labels": {"a": "b"}},
                                          "spec": {"selector": {"app": "web"},
                                                   "ports": [{"port": 80}]}})
        ip = svc["spec"]["clusterIP"]
        self.assertTrue(ip.startswith("10.9") and ip not in ("10.96.0.1", "10.96.0.10"), ip)
        self.assertEqual(svc["spec"]["ports"][0]["targetPort"], 80)
        self.assertEqual(self.kube.request("POST", base, {"metadata": {"name": "web"}, "spec": {
            "ports": [{"port": 81}]}})[0], 409)
        for bad in ({"ports": []}, {"ports": [{"port": 0}]},
                    {"ports": [{"port": 80, "protocol": "ICMP"}]}, {"type": "NodePort",
                                                                     "ports": [{"port": 80}]}):
            st, _, obj = self.kube.request("POST", base, {"metadata": {"name": "bad"},
                                                          "spec": bad})
            self.assertEqual((st, obj["reason"]), (422, "Invalid"), bad)
        lst = self.kube.ok("GET", base + "?labelSelector=a%3Db")["items"]
        self.assertEqual([s["metadata"]["name"] for s in lst], ["web"])
        self.assertEqual(self.kube.ok("GET", "/api/v1/namespaces/default/services/kubernetes")[
            "spec"]["clusterIP"], "10.96.0.1")
        self.kube.ok("DELETE", base + "/web")
        self.assertEqual(self.kube.request("GET", base + "/web")[0], 404)


class NetpolRulesTest(unittest.TestCase):
    """kube_netpol: NetworkPolicy -> iptables lines, as the API defines the semantics (pure)."""

    def setUp(self):
        sys.path.insert(0, HERE)
        import kube_netpol
        self.np = kube_netpol

        def pod(ns, name, ip, labels, ports=(), host=False):
            return {"ns": ns, "name": name, "uid": name, "ip": ip, "labels": labels,
                    "hostNetwork": host, "node": "n1",
                    "spec": {"containers": [{"ports": [dict(p) for p in ports]}]}}
        self.me = pod("sandprobe", "me", "172.31.200.5", {"role": "client"})
        self.web = pod("sandprobe", "web", "172.31.200.6", {"app": "web"},
                       [{"name": "http", "containerPort": 8080, "protocol": "TCP"}])
        self.other = pod("other", "web2", "172.31.200.7", {"app": "web"},
                         [{"name": "http", "containerPort": 9090, "protocol": "TCP"}])
        self.hostpod = pod("sandprobe", "h", "172.31.200.2", {"app": "web"}, host=True)
        self.pods = [self.me, self.web, self.other, self.hostpod]
        self.nss = {"sandprobe": {"kubernetes.io/metadata.name": "sandprobe"},
                    "other": {"kubernetes.io/metadata.name": "other", "team": "x"}}

    def pol(self, name, spec, ns="sandprobe"):
        spec = dict(spec)
        spec.setdefault("podSelector", {"matchLabels": {"role": "client"}})
        return {"metadata": {"name": name, "namespace": ns}, "spec": spec}

    def egress(self, *pols):
        _, host, summary, sel = self.np.filter_rules(self.me, list(pols), self.pods, self.nss,
                                                     "FKE-x-1")
        return [h for h in host if not h.startswith(":")], summary, sel

    def test_not_selected_means_not_isolated(self):
        rules, summary, sel = self.egress(self.pol("p", {"podSelector": {"matchLabels": {
            "role": "server"}}, "policyTypes": ["Egress"]}))
        self.assertEqual((rules, sel), ([], []))
        self.assertIn("Egress: not isolated (all allowed)", summary)

    def test_egress_without_policy_types_defaults_to_ingress_only(self):
        rules, _, _ = self.egress(self.pol("p", {"egress": []}))  # egress [] => no Egress type
        self.assertEqual(rules, [])

    def test_named_port_resolves_per_peer_pod_and_host_network_is_no_peer(self):
        rules, _, _ = self.egress(self.pol("p", {"policyTypes": ["Egress"], "egress": [{
            "to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "web"}}}],
            "ports": [{"port": "http"}]}]}))
        self.assertEqual(rules, [
            "-A FKE-x-1 -d 172.31.200.6/32 -p tcp -m tcp --dport 8080 -j ACCEPT",
            "-A FKE-x-1 -d 172.31.200.7/32 -p tcp -m tcp --dport 9090 -j ACCEPT",
            "-A FKE-x-1 -j DROP"])

    def test_pod_selector_alone_is_the_policy_namespace(self):
        rules, _, _ = self.egress(self.pol("p", {"policyTypes": ["Egress"], "egress": [{
            "to": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]}))
        self.assertEqual(rules, ["-A FKE-x-1 -d 172.31.200.6/32 -j ACCEPT", "-A FKE-x-1 -j DROP"])

    def test_namespace_selector_match_expressions_end_port_udp(self):
        rules, _, _ = self.egress(self.pol("p", {"policyTypes": ["Egress"], "egress": [{
            "to": [{"namespaceSelector": {"matchExpressions": [
                {"key": "team", "operator": "In", "values": ["x"]}]}}],
            "ports": [{"protocol": "UDP", "port": 1000, "endPort": 2000}]}]}))
        self.assertEqual(rules, [
            "-A FKE-x-1 -d 172.31.200.7/32 -p udp -m udp --dport 1000:2000 -j ACCEPT",
            "-A FKE-x-1 -j DROP"])

    def test_ip_block_except_and_policies_add_up(self):
        rules, _, sel = self.egress(
            self.pol("a", {"policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {
                "cidr": "172.31.200.0/24", "except": ["172.31.200.6/32"]}}]}]}),
            self.pol("b", {"policyTypes": ["Egress"], "egress": [{"ports": [
                {"protocol": "UDP", "port": 53}]}]}))
        self.assertEqual(sel, ["a", "b"])
        self.assertEqual(rules, [
            "-A FKE-x-1-1-0 -d 172.31.200.6/32 -j RETURN",
            "-A FKE-x-1-1-0 -d 172.31.200.0/24 -j ACCEPT",
            "-A FKE-x-1 -j FKE-x-1-1-0",
            "-A FKE-x-1 -p udp -m udp --dport 53 -j ACCEPT",
            "-A FKE-x-1 -j DROP"])

    def test_deny_all_and_ingress_in_pod_netns(self):
        netns, host, summary, _ = self.np.filter_rules(
            self.me, [self.pol("d", {"policyTypes": ["Egress", "Ingress"], "egress": [],
                                     "ingress": [{"from": [{"podSelector": {}}]}]})],
            self.pods, self.nss, "FKE-x-1")
        self.assertEqual([h for h in host if not h.startswith(":")], ["-A FKE-x-1 -j DROP"])
        self.assertIn("-A FK-INGRESS -s 172.31.200.6/32 -j ACCEPT", netns)
        self.assertEqual(netns[-1], "-A FK-INGRESS -j DROP")
        self.assertNotIn("-A FK-INGRESS -s 172.31.200.2/32 -j ACCEPT", netns)  # hostNetwork

    def test_service_dnat_and_reject_without_endpoints(self):
        svcs = [{"metadata": {"namespace": "sandprobe", "name": "web"},
                 "spec": {"clusterIP": "10.96.0.2", "ports": [{"port": 80, "targetPort": 8080}]}},
                {"metadata": {"namespace": "sandprobe", "name": "empty"},
                 "spec": {"clusterIP": "10.96.0.3", "ports": [{"port": 80}]}}]
        nat, rejects = self.np.nat_rules(
            svcs, lambda svc, t: [("172.31.200.6", t)] if svc["metadata"]["name"] == "web"
            else [], "172.31.200.1")
        self.assertIn("-A FK-SERVICES -d 10.96.0.2/32 -p tcp -m tcp --dport 80 -j DNAT "
                      "--to-destination 172.31.200.6:8080", nat)
        self.assertEqual(rejects, ["-A FK-SVC-REJECT -d 10.96.0.3/32 -p tcp -m tcp --dport 80 "
                                   "-j REJECT --reject-with icmp-port-unreachable"])


class RbacTest(unittest.TestCase):
    """Authorization as an RBAC API server does it: service-account tokens (POST /fake/token)
    against the bootstrap roles and the RBAC objects created here; the reviews' shapes."""
    RBAC = "/apis/rbac.authorization.k8s.io/v1"
    REVIEWS = "/apis/authorization.k8s.io/v1"

    @classmethod
    def setUpClass(cls):
        cls.kube = FakeKube()

    @classmethod
    def tearDownClass(cls):
        cls.kube.proc.terminate()
        cls.kube.proc.communicate(timeout=30)
        cls.kube.dir.cleanup()

    def token(self, account, ns=NS):
        status, _, body = self.kube.request("POST", "/fake/token", {
            "namespace": ns, "serviceAccount": account}, token=False)
        self.assertEqual(status, 200, body)
        return body["token"]

    def rules(self, token, ns=NS):
        status, _, body = self.kube.request("POST", f"{self.REVIEWS}/selfsubjectrulesreviews", {
            "kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
            "spec": {"namespace": ns}}, token=token)
        self.assertEqual(status, 201, body)
        return body

    def can(self, token, **attrs):
        status, _, body = self.kube.request("POST", f"{self.REVIEWS}/selfsubjectaccessreviews", {
            "spec": {"resourceAttributes": attrs}}, token=token)
        self.assertEqual(status, 201, body)
        return body["status"]

    def test_a_token_is_its_account_and_rbac_denies_in_the_authorizers_words(self):
        tok = self.token("nobody-bound")
        self.assertEqual(tok, self.token("nobody-bound"))  # one token per account
        status, _, body = self.kube.request("GET", f"/api/v1/namespaces/{NS}/pods", token=tok)
        self.assertEqual((status, body["reason"]), (403, "Forbidden"))
        self.assertEqual(body["message"], 'pods is forbidden: User "system:serviceaccount:'
                         f'{NS}:nobody-bound" cannot list resource "pods" in API group "" in '
                         f'the namespace "{NS}"')
        status, _, body = self.kube.request("GET", "/metrics", token=tok)
        self.assertEqual(body["message"], 'forbidden: User "system:serviceaccount:'
                         f'{NS}:nobody-bound" cannot get path "/metrics"')
        # Discovery and /version are every authenticated subject's (system:discovery).
        self.assertEqual(self.kube.request("GET", "/version", token=tok)[0], 200)
        self.assertEqual(self.kube.request("GET", "/apis/batch/v1", token=tok)[0], 200)
        self.assertEqual(self.kube.request("GET", "/version", token="forged")[0], 401)

    def test_rules_review_of_a_default_account_lists_the_bootstrap_rules_only(self):
        body = self.rules(self.token("plain"))
        self.assertEqual((body["kind"], body["apiVersion"], body["spec"]),
                         ("SelfSubjectRulesReview", "authorization.k8s.io/v1",
                          {"namespace": NS}))
        st = body["status"]
        self.assertIs(st["incomplete"], False)
        self.assertNotIn("evaluationError", st)
        self.assertEqual(sorted(g for r in st["resourceRules"] for g in r["apiGroups"]),
                         ["authentication.k8s.io", "authorization.k8s.io"])
        urls = {u for r in st["nonResourceRules"] for u in r["nonResourceURLs"]}
        self.assertIn("/apis/*", urls)
        self.assertIn("/openid/v1/jwks", urls)  # issuer discovery: every service account's
        self.assertEqual({v for r in st["nonResourceRules"] for v in r["verbs"]}, {"get"})

    def test_bindings_grant_what_they_name_where_they_apply(self):
        k, tok = self.kube, self.token("worker")
        k.ok("POST", f"{self.RBAC}/namespaces/{NS}/roles", {
            "metadata": {"name": "pod-maker"},
            "rules": [{"apiGroups": [""], "resources": ["pods", "pods/exec"],
                       "verbs": ["create"]},
                      {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                       "resourceNames": ["one"]}]})
        k.ok("POST", f"{self.RBAC}/namespaces/{NS}/rolebindings", {
            "metadata": {"name": "worker-makes-pods"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "pod-maker"},
            "subjects": [{"kind": "ServiceAccount", "name": "worker"}]})
        made = self.can(tok, namespace=NS, verb="create", resource="pods")
        self.assertEqual(made, {"allowed": True, "reason": 'RBAC: allowed by RoleBinding '
                                '"worker-makes-pods/sandprobe" of Role "pod-maker" to '
                                'ServiceAccount "worker/sandprobe"'})
        self.assertIs(self.can(tok, namespace=NS, verb="create", resource="pods",
                               subresource="exec")["allowed"], True)
        self.assertEqual(self.can(tok, namespace="default", verb="create", resource="pods"),
                         {"allowed": False})  # a RoleBinding grants in its namespace only
        self.assertIs(self.can(tok, namespace=NS, verb="get", resource="secrets",
                               name="one")["allowed"], True)
        self.assertIs(self.can(tok, namespace=NS, verb="get", resource="secrets",
                               name="two")["allowed"], False)
        st = self.rules(tok)["status"]
        self.assertIn({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                       "resourceNames": ["one"]}, st["resourceRules"])
        self.assertEqual(self.rules(tok, "default")["status"]["resourceRules"],
                         self.rules(self.token("plain"))["status"]["resourceRules"])
        # The request itself is authorized the same way.
        status, _, _ = k.request("GET", f"/api/v1/namespaces/{NS}/secrets/one", token=tok)
        self.assertEqual(status, 404)  # allowed, and the fake serves no secrets
        k.ok("DELETE", f"{self.RBAC}/namespaces/{NS}/rolebindings/worker-makes-pods")
        self.assertIs(self.can(tok, namespace=NS, verb="create", resource="pods")["allowed"],
                      False)

    def test_a_binding_to_a_missing_role_is_an_evaluation_error(self):
        self.kube.ok("POST", f"{self.RBAC}/namespaces/{NS}/rolebindings", {
            "metadata": {"name": "dangling"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gone"},
            "subjects": [{"kind": "ServiceAccount", "name": "dangler", "namespace": NS}]})
        st = self.rules(self.token("dangler"))["status"]
        self.assertEqual(st["evaluationError"], 'role.rbac.authorization.k8s.io "gone" not found')
        self.assertEqual(self.can(self.token("dangler"), namespace=NS, verb="get",
                                  resource="pods"),
                         {"allowed": False,
                          "reason": 'RBAC: role.rbac.authorization.k8s.io "gone" not found'})

    def test_review_errors_and_the_administrator(self):
        tok = self.token("plain")
        status, _, body = self.kube.request("POST", f"{self.REVIEWS}/selfsubjectrulesreviews",
                                            {"spec": {}}, token=tok)
        self.assertEqual((status, body["message"]), (400, "no namespace on request"))
        status, _, body = self.kube.request("POST", f"{self.REVIEWS}/selfsubjectaccessreviews",
                                            {"spec": {}}, token=tok)
        self.assertEqual((status, body["reason"]), (422, "Invalid"))
        # Authorization comes before the handler: list is nobody's but the administrator's.
        path = f"{self.REVIEWS}/selfsubjectrulesreviews"
        self.assertEqual(self.kube.request("GET", path, token=tok)[0], 403)
        self.assertEqual(self.kube.request("GET", path)[0], 405)
        admin = self.rules(True)["status"]
        self.assertIn({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                      admin["resourceRules"])
        status, _, body = self.kube.request("POST", f"{self.RBAC}/clusterrolebindings", {
            "metadata": {"name": "bad"}, "roleRef": {"kind": "Role", "name": "x"}})
        self.assertEqual((status, body["reason"]), (422, "Invalid"))
        groups = [g["name"] for g in self.kube.ok("GET", "/apis")["groups"]]
        self.assertIn("rbac.authorization.k8s.io", groups)
        self.assertIn("authorization.k8s.io", groups)


class OomEventsTest(unittest.TestCase):
    """kube_oom.OomEvents: an OOM event that arrives after the container's exit still counts
    (containerd's CRI sets Reason OOMKilled on a late TaskOOM); no event, no OOMKilled."""

    def setUp(self):
        sys.path.insert(0, HERE)
        import kube_oom
        # Stands in for `docker events`: the OOM of container c1 is reported 0.4 s late.
        self.events = kube_oom.OomEvents(["sh", "-c", "sleep 0.4; echo c1; sleep 30"])

    def tearDown(self):
        self.events.close()

    def test_late_event_counts_within_the_wait(self):
        self.assertFalse(self.events.oom_killed("c1"))  # not yet reported: no wait, no OOM
        t0 = time.monotonic()
        self.assertTrue(self.events.oom_killed("c1", wait_s=5.0))
        self.assertGreater(time.monotonic() - t0, 0.2)
        self.assertTrue(self.events.oom_killed("c1"))

    def test_no_event_is_no_oom(self):
        t0 = time.monotonic()
        self.assertFalse(self.events.oom_killed("c2", wait_s=0.8))
        self.assertGreaterEqual(time.monotonic() - t0, 0.8)
        self.assertTrue(self.events.oom_killed("c1", wait_s=5.0))
        self.assertFalse(self.events.oom_killed("c2"))

    def test_docker_argv_follows_oom_events_of_the_label(self):
        import kube_oom
        argv = kube_oom.OomEvents.docker_argv("io.sandprobe.fake-kube=abc", 100.5)
        self.assertEqual(argv[:4], ["docker", "events", "--since", "100.500"])
        self.assertIn("event=oom", argv)
        self.assertIn("label=io.sandprobe.fake-kube=abc", argv)


if __name__ == "__main__":
    unittest.main()
