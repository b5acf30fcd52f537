"""Self-test of the FAKE Kubernetes API server (fake_kube.py): a real server process, plain HTTPS.

Every request goes to the fake on 127.0.0.1 over TLS verified with the CA it generated; pods run
as local processes and make no network traffic. Run from this folder:
  python3 -m unittest -v test_fake_kube
Most tests share one server (settings changed through POST /fake/script); the shutdown, the
client-cert, the field validation, the reviews and the cluster-shape tests start their own.
"""
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
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

    def __init__(self, *args, auth="token"):
        self.dir = tempfile.TemporaryDirectory(prefix="fake-kube-test-")
        d = self.dir.name
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "fake_kube.py"), "--kubeconfig-out",
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


def job_body(name, script, labels=None, deadline=None, node=None, node_selector=None,
             timeout_s=20):
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
                                "capabilities": {"drop": ["ALL"]}}}]}
    if node:
        pod_spec["nodeName"] = node
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    spec = {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": pod_spec}}
    if deadline:
        spec["activeDeadlineSeconds"] = deadline
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": labels}, "spec": spec}


# A container that prints its pid and sleeps.
SLEEPS = "import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(30)"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
PODS = f"/api/v1/namespaces/{NS}/pods"
POLICIES = f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies"


def q(**params):
    return "?" + urllib.parse.urlencode(params)


class SharedServerTest(unittest.TestCase):
    """One fake for most tests; each test restores the settings it changes."""

    @classmethod
    def setUpClass(cls):
        cls.kube = FakeKube("--nodes", NODES)

    @classmethod
    def tearDownClass(cls):
        rc = cls.kube.stop()
        assert rc == 0, (rc, cls.kube.stderr)
        assert "Traceback" not in cls.kube.stderr, cls.kube.stderr

    def setUp(self):
        self.kube.script(faults=[], admission="admit")
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

    def running_pid(self, name):
        """(pod name, pid) of a Job's pod once its process printed `pid N` (SLEEPS does)."""
        def printed():
            pod = self.pod_of(name)
            status, _, text = self.logs(pod["metadata"]["name"]) if pod else (0, 0, b"")
            words = text.split() if status == 200 else []
            return words[:1] == [b"pid"] and (pod["metadata"]["name"], int(words[1]))
        return wait_for(printed, what=f"the pid of {name}'s process")

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
        self.create_job("slow", SLEEPS, deadline=1)
        name, pid = self.running_pid("slow")
        cond = self.finished("slow", timeout=5)
        self.assertEqual((cond["type"], cond["reason"]), ("Failed", "DeadlineExceeded"))
        self.assertEqual(self.job("slow")["status"]["failed"], 1)
        self.assertEqual(self.kube.request("GET", f"{PODS}/{name}")[0], 404)
        self.assertEqual(self.logs(name)[0], 404)
        self.assertFalse(_alive(pid))

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
        self.finished("f-oom")
        self.finished("f-evict")
        term = self.pod_of("f-oom")["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual((term["reason"], term["exitCode"]), ("OOMKilled", 137))
        evicted = self.pod_of("f-evict")["status"]
        self.assertEqual((evicted["phase"], evicted["reason"]), ("Failed", "Evicted"))
        events = self.kube.ok("GET", f"/api/v1/namespaces/{NS}/events" +
                              q(fieldSelector="involvedObject.name=f-fail"))["items"]
        failed = [e for e in events if e["reason"] == "FailedCreate"]
        self.assertEqual(len(failed), 1, events)
        self.assertEqual(failed[0]["type"], "Warning")
        self.assertIn("denied the request", failed[0]["message"])
        self.assertIsNone(self.pod_of("f-fail"))
        cond = self.finished("f-fail", timeout=5)
        self.assertEqual(cond["reason"], "DeadlineExceeded")

    # -- network policy: stored, never enforced (enforcement is the real cluster's)
    def test_policies_are_defaulted_stored_listed_and_deleted_by_label(self):
        labels = {"sandprobe.io/run": self.run_id}
        deny = self.kube.ok("POST", POLICIES, {
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": f"deny-{self.run_id}", "labels": labels},
            "spec": {"podSelector": {"matchLabels": {"arm": "x"}}, "policyTypes": ["Egress"],
                     "egress": []}})
        self.assertRegex(deny["metadata"]["creationTimestamp"],
                         r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        bare = self.kube.ok("POST", POLICIES, {"metadata": {"name": f"bare-{self.run_id}",
                                                            "labels": labels},
                                               "spec": {"egress": [{}]}})
        self.assertEqual((bare["spec"]["podSelector"], bare["spec"]["policyTypes"]),
                         ({}, ["Ingress", "Egress"]))
        status, _, obj = self.kube.request("POST", POLICIES, {
            "metadata": {"name": "bad"}, "spec": {"policyTypes": ["Sideways"]}})
        self.assertEqual((status, obj["reason"]), (422, "Invalid"), obj)
        self.assertEqual(self.kube.request("POST", POLICIES, deny)[0], 409)
        everywhere = self.kube.ok("GET", "/apis/networking.k8s.io/v1/networkpolicies")["items"]
        self.assertIn((NS, f"deny-{self.run_id}"),
                      [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere])
        gone = self.kube.ok("DELETE", POLICIES + q(labelSelector=f"sandprobe.io/run={self.run_id}"))
        self.assertEqual(len(gone["items"]), 2)
        self.assertEqual(self.kube.ok("GET", POLICIES + q(
            labelSelector=f"sandprobe.io/run={self.run_id}"))["items"], [])

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
        other = "u" + uuid.uuid4().hex[:8]
        self.create_job("dc-a", SLEEPS)
        self.create_job("dc-b", SLEEPS)
        self.create_job("dc-c", SLEEPS, labels={"sandprobe.io/run": other})
        pods = {n: self.running_pid(n) for n in ("dc-a", "dc-b", "dc-c")}
        obj = self.kube.ok("DELETE", JOBS + q(labelSelector=f"sandprobe.io/run={self.run_id}",
                                              propagationPolicy="Background"))
        self.assertEqual(obj["kind"], "JobList")
        self.assertEqual(sorted(j["metadata"]["name"] for j in obj["items"]), ["dc-a", "dc-b"])
        left = self.kube.ok("GET", PODS + q(labelSelector=f"sandprobe.io/run={self.run_id}"))
        self.assertEqual(left["items"], [])
        self.assertEqual([_alive(pods[n][1]) for n in ("dc-a", "dc-b", "dc-c")],
                         [False, False, True])
        # Orphan (the batch/v1 REST default) leaves the pod; the pod deletecollection removes it.
        self.kube.ok("DELETE", f"{JOBS}/dc-c")
        self.assertEqual(len(self.kube.ok("GET", PODS + q(
            labelSelector=f"sandprobe.io/run={other}"))["items"]), 1)
        self.assertTrue(_alive(pods["dc-c"][1]))
        self.kube.ok("DELETE", PODS + q(labelSelector=f"sandprobe.io/run={other}"))
        self.assertFalse(_alive(pods["dc-c"][1]))
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


# A container whose process forks a child that makes a process group of its own (as GNU timeout
# does; the session stays the pod's) and prints both pids.
FORKS = ("import os, time\npid = os.fork()\nif pid == 0:\n    os.setpgid(0, 0)\n"
         "    time.sleep(60)\n    os._exit(0)\nprint('pids', os.getpid(), pid, flush=True)\n"
         "time.sleep(60)\n")


class OwnServerTest(unittest.TestCase):
    def running_pids(self, kube):
        """(pod name, [its process's pid, its child's pid]) once they were printed."""
        def printed():
            items = kube.ok("GET", PODS + q(labelSelector="job-name=forks"))["items"]
            name = items[0]["metadata"]["name"] if items else "none"
            status, _, text = kube.request("GET", f"{PODS}/{name}/log")
            words = text.split() if status == 200 else []
            return words[:1] == [b"pids"] and (name, [int(w) for w in words[1:3]])
        return wait_for(printed, what="the pod's pids")

    def test_sigterm_kills_every_process_of_the_pod_and_exits_0(self):
        kube = FakeKube()
        try:
            kube.ok("POST", JOBS, job_body("forks", FORKS))
            _, pids = self.running_pids(kube)
        finally:
            rc = kube.stop()
        self.assertEqual(rc, 0, kube.stderr)
        wait_for(lambda: not any(map(_alive, pids)), 5, what="both processes gone")

    def test_pod_delete_kills_every_process_of_the_pod(self):
        kube = FakeKube()
        try:
            kube.ok("POST", JOBS, job_body("forks", FORKS))
            pod, pids = self.running_pids(kube)
            kube.ok("DELETE", f"{PODS}/{pod}")
            wait_for(lambda: not any(map(_alive, pids)), 5, what="both processes gone")
            wait_for(lambda: kube.ok("GET", f"{JOBS}/forks")["status"].get("conditions"),
                     what="the Job's conditions")
            self.assertEqual(kube.ok("GET", f"{JOBS}/forks")["status"]["conditions"][-1]["type"],
                             "Failed")
        finally:
            self.assertEqual(kube.stop(), 0)

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

    def test_strict_applies_to_pods_and_policies(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicyy": "Never"}]}}
        status, _, obj = self.kube.request("POST", PODS + q(dryRun="All",
                                                            fieldValidation="Strict"), pod)
        self.assertEqual((status, obj["message"]), (400, 'Pod in version "v1" cannot be handled '
                         'as a Pod: strict decoding error: unknown field '
                         '"spec.containers[0].imagePullPolicyy"'))
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


class ClusterShapeTest(unittest.TestCase):
    """What the driver reads besides its Jobs: /version, nodes, services (list only), the forbid
    fault (process kubelet; no pods run here)."""

    @classmethod
    def setUpClass(cls):
        cls.kube = FakeKube("--version-string", "v1.30.2+k3s2", "--nodes", "n1,n2:unschedulable",
                            "--fault", "forbid=/api/v1/namespaces/sandprobe/events")

    @classmethod
    def tearDownClass(cls):
        assert cls.kube.stop() == 0

    def test_version_string(self):
        v = self.kube.ok("GET", "/version")
        self.assertEqual((v["gitVersion"], v["major"], v["minor"]), ("v1.30.2+k3s2", "1", "30"))

    def test_nodes(self):
        nodes = self.kube.ok("GET", "/api/v1/nodes")
        self.assertEqual((nodes["kind"], [n["metadata"]["name"] for n in nodes["items"]]),
                         ("NodeList", ["n1", "n2"]))
        n2 = self.kube.ok("GET", "/api/v1/nodes/n2")
        self.assertIs(n2["spec"]["unschedulable"], True)
        self.assertEqual(n2["spec"]["taints"][0]["effect"], "NoSchedule")

    def test_forbid_fault(self):
        st, _, obj = self.kube.request("GET", f"/api/v1/namespaces/{NS}/events")
        self.assertEqual((st, obj["reason"]), (403, "Forbidden"))
        self.assertEqual(obj["message"], 'events is forbidden: User "system:serviceaccount:'
                         'sandprobe:sandprobe" cannot list resource "events" in API group "" in '
                         'the namespace "sandprobe"')
        self.kube.ok("GET", f"/api/v1/namespaces/{NS}/pods")  # other paths unaffected

    def test_services_are_listed_never_created(self):
        base = f"/api/v1/namespaces/{NS}/services"
        self.assertEqual(self.kube.ok("GET", base + q(labelSelector="sandprobe.io/run=x")),
                         {"kind": "ServiceList", "apiVersion": "v1", "items": [],
                          "metadata": {"resourceVersion": self.kube.ok("GET", base)["metadata"][
                              "resourceVersion"]}})
        st, _, obj = self.kube.request("POST", base, {"metadata": {"name": "web"},
                                                      "spec": {"ports": [{"port": 80}]}})
        self.assertEqual((st, obj["reason"]), (405, "MethodNotAllowed"))
        self.assertEqual(self.kube.request("DELETE", base + "/web")[0], 404)


class ReviewsTest(unittest.TestCase):
    """--reviews: the self-subject reviews answered from the test's table, in the real shapes;
    a token outside the table and the kubeconfig is 401."""
    REVIEWS = "/apis/authorization.k8s.io/v1"
    RULES = {"resourceRules": [{"verbs": ["get", "list"], "apiGroups": [""],
                                "resources": ["secrets"]}],
             "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}],
             "incomplete": False}
    ALLOWED = {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "rb/sandprobe" of Role '
               '"r" to ServiceAccount "reader/sandprobe"'}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        path = os.path.join(cls.tmp.name, "reviews.json")
        with open(path, "w") as f:
            json.dump({"reader-token": {
                "user": "system:serviceaccount:sandprobe:reader", "rules": cls.RULES,
                "access": [{"resourceAttributes": {"namespace": NS, "verb": "list",
                                                   "resource": "secrets"},
                            "status": cls.ALLOWED}]}}, f)
        cls.kube = FakeKube("--reviews", path)

    @classmethod
    def tearDownClass(cls):
        assert cls.kube.stop() == 0
        cls.tmp.cleanup()

    def post(self, kind, spec, token="reader-token"):
        return self.kube.request("POST", f"{self.REVIEWS}/{kind}", {"spec": spec}, token=token)

    def test_rules_review_is_the_scripted_status_in_the_real_envelope(self):
        status, _, body = self.post("selfsubjectrulesreviews", {"namespace": NS})
        self.assertEqual((status, body), (201, {
            "kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": {"namespace": NS},
            "status": self.RULES}))
        status, _, body = self.post("selfsubjectrulesreviews", {})
        self.assertEqual((status, body["message"]), (400, "no namespace on request"))

    def test_access_review_matches_every_attribute(self):
        asked = {"namespace": NS, "verb": "list", "resource": "secrets"}
        status, _, body = self.post("selfsubjectaccessreviews", {"resourceAttributes": asked})
        self.assertEqual((status, body["kind"], body["status"]),
                         (201, "SelfSubjectAccessReview", self.ALLOWED))
        for other in ({"verb": "list", "resource": "secrets"},  # all namespaces
                      dict(asked, subresource="exec"), dict(asked, verb="get")):
            status, _, body = self.post("selfsubjectaccessreviews", {"resourceAttributes": other})
            self.assertEqual((status, body["status"]), (201, {"allowed": False}), other)
        status, _, body = self.post("selfsubjectaccessreviews", {})
        self.assertEqual((status, body["reason"]), (422, "Invalid"))

    def test_unknown_tokens_are_401_and_an_unscripted_caller_is_told_so(self):
        self.assertEqual(self.post("selfsubjectrulesreviews", {"namespace": NS}, "forged")[0],
                         401)
        status, _, body = self.post("selfsubjectrulesreviews", {"namespace": NS}, True)
        self.assertEqual((status, body["status"]["incomplete"]), (201, True))
        self.assertIn("no --reviews answer", body["status"]["evaluationError"])
        self.assertEqual(self.kube.request("GET", f"{self.REVIEWS}/selfsubjectrulesreviews")[0],
                         405)


if __name__ == "__main__":
    unittest.main()
