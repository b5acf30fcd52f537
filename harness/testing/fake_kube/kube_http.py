"""HTTPS request handling of the FAKE Kubernetes API server (tests only): routes, verbs, watch,
logs, the scripted request faults and the /fake/ control endpoints.

Served: GET /version; namespaced resources at /api/v1/namespaces/{ns}/{pods,events,services} and
/apis/batch/v1/namespaces/{ns}/jobs, /apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies
(also listed across namespaces), cluster-wide /api/v1/{namespaces,nodes}: GET one, list with
labelSelector / fieldSelector, watch, POST (jobs, pods, networkpolicies), DELETE one or by
selector (deletecollection), pods/{name}/log; POST /apis/authorization.k8s.io/v1/
selfsubject{rules,access}reviews (kube_auth.py). Anything else: 404, or 405 for another verb.
Request faults, in this order after authentication: hang-after, forbid, 429.
"""
import copy
import json
import re
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kube_auth
from kube_cluster import ADMISSION_MODES
from kube_schema import MODES, ROOTS, Pairs, decode, loads_pairs, plain, status_message, \
    warning_header
from kube_store import (RESOURCES, ApiError, check_field_selector, not_found,
                        parse_field_selector, parse_label_selector, status)

NO_RESOURCE = "the server could not find the requested resource"


def group_of(resource):
    api_version = RESOURCES[resource][1]
    return api_version.split("/")[0] if "/" in api_version else ""


class FakeServer(ThreadingHTTPServer):
    """One TLS listener on 127.0.0.1 (kernel-chosen port) in front of a Cluster."""
    daemon_threads = True

    def __init__(self, cluster, ssl_ctx, token, reviews, version, parse_faults):
        super().__init__(("127.0.0.1", 0), Handler)
        self.cluster, self.ssl_ctx, self.token = cluster, ssl_ctx, token
        self.reviews = reviews  # bearer token -> --reviews entry (kube_auth.py)
        self.version = version  # the GET /version body
        self.parse_faults = parse_faults
        self.hang = threading.Event()  # set at shutdown: hung handlers return
        self.lock = threading.Lock()  # guards the counters and the request log
        self.api_requests = 0
        self.watch_count = 0
        self.request_log = []

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
            self.handshake_ok = True
        except (ssl.SSLError, OSError):
            self.handshake_ok = False
        self.request.settimeout(600)
        super().setup()

    def handle(self):
        if self.handshake_ok:
            try:
                super().handle()
            except (ConnectionError, ssl.SSLError, TimeoutError):
                pass

    def log_message(self, fmt, *args):  # quiet; GET /fake/requests has the log
        pass

    def send_json(self, code, obj, headers=None):
        """headers: name -> value, or a list of values (one header line each, e.g. Warning)."""
        self.send_body(code, "application/json", (json.dumps(obj) + "\n").encode(), headers)

    def send_body(self, code, content_type, data, headers=None):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            for one in (v if isinstance(v, list) else [v]):
                self.send_header(k, one)
        self.end_headers()
        self.wfile.write(data)
        self.status_sent = code

    def do_any(self):
        self.dispatch(self.command)

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_any

    def read_body(self):
        """The JSON body as plain values (a repeated key: its last value); self.body_pairs keeps
        keys in order with duplicates for strict field validation (kube_schema.py)."""
        self.body_pairs = None
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        if not data:
            return None
        try:
            self.body_pairs = loads_pairs(data)
        except json.JSONDecodeError as e:
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format - "
                           f"accepted media types include: application/json ({e})")
        return plain(self.body_pairs)

    def authenticate(self):
        """(user name, its --reviews entry or None), or None: 401 (kube_auth.py)."""
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            given = auth[7:].strip()
            if given == self.server.token:
                return kube_auth.ADMIN, None
            if given in self.server.reviews:
                return self.server.reviews[given]["user"], self.server.reviews[given]
        try:
            return (kube_auth.ADMIN, None) if self.request.getpeercert() else None
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
            with srv.lock:
                srv.api_requests += 1
                n = srv.api_requests
            faults = srv.cluster.settings["faults"]
            if faults["hang-after"] is not None and n > faults["hang-after"]:
                self.status_sent = "hang"
                self.record_request(method)
                srv.hang.wait()
                self.close_connection = True
                return
            self.body = self.read_body()
            who = self.authenticate()
            if who is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            self.user, self.reviews = who
            if any(re.search(regex, self.path) for regex in faults["forbid"]):
                raise kube_auth.forbidden("system:serviceaccount:sandprobe:sandprobe",
                                          kube_auth.request_attributes(method, path, query))
            with srv.lock:
                for entry in faults["429"]:
                    if entry[1] > 0 and re.search(entry[0], self.path):
                        entry[1] -= 1
                        raise ApiError(429, "TooManyRequests",
                                       "Too many requests, please try again later.",
                                       {"causes": [{"message": "scripted by --fault 429"}],
                                        "retryAfterSeconds": 1}, {"Retry-After": "1"})
            self.route(method, path, query)
        except ApiError as e:
            self.send_json(e.code, e.body, e.headers)
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
                self.record_request(method)

    def record_request(self, method):
        with self.server.lock:
            log = self.server.request_log
            log.append({"method": method, "path": self.path, "status": self.status_sent,
                        "time": time.time()})
            if len(log) > 20000:
                del log[:1000]

    def route(self, method, path, query):
        parts = path.strip("/").split("/")
        if path == "/version":
            return self.send_json(200, self.server.version)
        if parts[:3] == ["apis"] + kube_auth.AUTHZ_GV.split("/") and len(parts) == 4 and \
                parts[3] in kube_auth.REVIEWS:
            if method != "POST":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method "
                               "on the requested resource")
            if not isinstance(self.body, dict):
                raise ApiError(400, "BadRequest", "the body of the request was empty or not an "
                               "object")
            return self.send_json(201, kube_auth.review(parts[3], self.reviews, self.body))
        if parts[:2] == ["api", "v1"] and len(parts) >= 3:
            gv, rest = "v1", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            raise ApiError(404, "NotFound", NO_RESOURCE)
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        resource, name, sub = (rest + [None, None])[:3]
        if resource not in RESOURCES or RESOURCES[resource][1] != gv or len(rest) > 3 or \
                (ns is not None and not RESOURCES[resource][2]) or \
                (ns is None and RESOURCES[resource][2] and name is not None) or \
                sub not in (None, "log" if resource == "pods" else None):
            raise ApiError(404, "NotFound", NO_RESOURCE)
        if ns is not None:
            with self.server.cluster.store.cond:
                self.server.cluster.require_namespace_locked(ns)
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
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the "
                       "requested resource (fake-kube supports GET, POST, DELETE)")

    # -- verbs
    def selectors(self, resource, query):
        lreqs = parse_label_selector(query.get("labelSelector", ""))
        freqs = parse_field_selector(query.get("fieldSelector", ""))
        check_field_selector(resource, freqs)
        return lreqs, freqs

    def get_one(self, resource, ns, name):
        store = self.server.cluster.store
        with store.cond:
            obj = store.get_locked(resource, ns, name)
            if obj is None:
                raise not_found(resource, name, group_of(resource))
            self.send_json(200, copy.deepcopy(obj))

    def list_or_watch(self, resource, ns, query):
        lreqs, freqs = self.selectors(resource, query)
        if query.get("watch") in ("1", "true", "True"):
            return self.watch(resource, ns, lreqs, freqs, query)
        store = self.server.cluster.store
        with store.cond:
            body = store.list_response_locked(resource, store.list_locked(resource, ns, lreqs,
                                                                          freqs))
        self.send_json(200, body)

    def watch(self, resource, ns, lreqs, freqs, query):
        """A chunked stream of WatchEvents from resourceVersion (none or "0": ADDED for what
        exists), BOOKMARKs each second when allowed, until timeoutSeconds; 410 as an ERROR event
        for a compacted rv or the watch-gone fault; watch-break-after=N cuts the socket."""
        cluster, srv = self.server.cluster, self.server
        store, faults = cluster.store, cluster.settings["faults"]
        try:
            deadline = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
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
        self.status_sent, self.close_connection = 200, True

        def chunk(obj):
            data = (json.dumps(obj) + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def end(error=None):
            if error is not None:
                chunk({"type": "ERROR", "object": error.body})
            self.wfile.write(b"0\r\n\r\n")

        with srv.lock:
            srv.watch_count += 1
            scripted_gone = faults["watch-gone"] > 0
            faults["watch-gone"] -= scripted_gone
        with store.cond:
            if scripted_gone:
                return end(ApiError(410, "Expired", f"too old resource version: {rv_text or 0} "
                                    f"({store.rv}) (scripted by --fault watch-gone)"))
            if rv_text in ("", "0"):
                pending = [{"type": "ADDED", "object": o}
                           for o in store.list_locked(resource, ns, lreqs, freqs)]
                from_rv = store.rv
            else:
                pending, from_rv = [], int(rv_text)
        sent, limit, last_bookmark = 0, faults["watch-break-after"], time.monotonic()
        while True:
            with store.cond:
                while not pending and not cluster.stopping.is_set():
                    try:
                        pending = [e for _, e in store.events_since_locked(
                            from_rv, resource, ns, lreqs, freqs)]
                    except ApiError as e:
                        return end(e)
                    from_rv = store.rv
                    left = deadline - time.monotonic()
                    if pending or left <= 0 or (bookmarks and
                                                time.monotonic() - last_bookmark >= 1.0):
                        break
                    store.cond.wait(min(left, 0.5))
                current = str(store.rv)
            if cluster.stopping.is_set() or (not pending and time.monotonic() >= deadline):
                return end()
            if not pending:
                last_bookmark = time.monotonic()
                chunk({"type": "BOOKMARK", "object": {
                    "kind": RESOURCES[resource][0], "apiVersion": RESOURCES[resource][1],
                    "metadata": {"resourceVersion": current,
                                 "annotations": {"k8s.io/initial-events-end": "true"}}}})
            for event in pending:
                chunk(event)
                sent += 1
                if limit is not None and sent >= limit:
                    try:  # cut mid-stream: no terminating chunk, as a dropped connection
                        self.request.shutdown(2)
                    except OSError:
                        pass
                    return
            pending = []

    def field_validation(self, query):
        """The fieldValidation directive of a create (kube_schema.py): Strict, Warn or Ignore."""
        value = query.get("fieldValidation", "")
        version = self.server.version
        if (int(version["major"]), int(version["minor"])) < (1, 25):
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
        if resource not in ROOTS:
            raise ApiError(405, "MethodNotAllowed", f"fake-kube does not create {resource}")
        if not isinstance(self.body, dict):
            raise ApiError(400, "BadRequest", "the body of the request was empty or not an object")
        dry_run = query.get("dryRun") == "All"
        # As the API server decodes the body: unknown and duplicate fields are a 400 (Strict),
        # Warning headers (Warn, the default) or nothing (Ignore); the object goes on without them.
        mode = self.field_validation(query)
        body, problems = decode(self.body_pairs, ROOTS[resource]) if isinstance(
            self.body_pairs, Pairs) else (self.body, [])
        if problems and mode == "Strict":
            raise ApiError(400, "BadRequest", status_message(ROOTS[resource], problems))
        warnings = [warning_header(p) for p in problems] if mode == "Warn" else []
        if resource == "jobs":
            obj = cluster.create_job(ns, body, dry_run)
        elif resource == "pods":
            obj, warning = cluster.create_pod(ns, body, dry_run)
            warnings += [f'299 - "{warning}"'] if warning else []
        elif dry_run:
            raise ApiError(400, "BadRequest", "fake-kube: dryRun only for pods and jobs")
        else:
            obj = cluster.create_policy(ns, body)
        self.send_json(201, obj, {"Warning": warnings} if warnings else None)

    def delete(self, resource, ns, name, query):
        opts = self.body if isinstance(self.body, dict) else {}
        propagation = query.get("propagationPolicy") or opts.get("propagationPolicy") or "Orphan"
        if propagation not in ("Orphan", "Background", "Foreground"):
            raise ApiError(400, "BadRequest", f'Unsupported value: "{propagation}": supported '
                           'values: "Foreground", "Background", "Orphan"')
        if name is not None:
            obj = self.delete_named(resource, ns, name, propagation)
            if resource in ("pods", "services"):
                return self.send_json(200, obj)
            return self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                        "status": "Success", "details": {
                                            "name": name, "group": group_of(resource),
                                            "kind": resource, "uid": obj["metadata"]["uid"]}})
        if resource not in ("jobs", "pods", "networkpolicies"):
            raise ApiError(405, "MethodNotAllowed", f"fake-kube: no deletecollection of {resource}")
        lreqs, freqs = self.selectors(resource, query)
        store = self.server.cluster.store
        with store.cond:
            names = [o["metadata"]["name"] for o in store.list_locked(resource, ns, lreqs, freqs)]
        deleted = []
        for one in names:
            try:
                deleted.append(self.delete_named(resource, ns, one, propagation))
            except ApiError as e:
                if e.code != 404:
                    raise
        with store.cond:
            self.send_json(200, store.list_response_locked(resource, deleted))

    def delete_named(self, resource, ns, name, propagation):
        cluster = self.server.cluster
        if resource == "jobs":
            return cluster.delete_job(ns, name, propagation)
        if resource == "pods":
            return cluster.delete_pod(ns, name)
        if resource not in ("networkpolicies", "services"):
            raise ApiError(405, "MethodNotAllowed", f"fake-kube does not delete {resource}")
        with cluster.store.cond:
            obj = cluster.store.delete_locked(resource, ns, name)
        if obj is None:
            raise not_found(resource, name, group_of(resource))
        return obj

    def pod_log(self, ns, name, query):
        """pods/log with limitBytes: 400 while the container waits, 404 once the pod is gone."""
        cluster = self.server.cluster
        with cluster.store.cond:
            pod = cluster.store.get_locked("pods", ns, name)
            if pod is None:
                raise not_found("pods", name)
            container = query.get("container") or pod["spec"]["containers"][0]["name"]
            path = cluster.kubelet.log_path_locked(pod)
            if path is None:
                cs = (pod.get("status", {}).get("containerStatuses") or [{}])[0]
                reason = cs.get("state", {}).get("waiting", {}).get("reason", "ContainerCreating")
                raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is '
                               f"waiting to start: {reason}")
        limit = query.get("limitBytes")
        if limit is not None and (not limit.isdigit() or int(limit) <= 0):
            raise ApiError(422, "Invalid", 'PodLogOptions "" is invalid: limitBytes: Invalid '
                           "value: must be greater than 0")
        try:
            with open(path, "rb") as f:
                data = f.read(int(limit) if limit is not None else -1)
        except FileNotFoundError:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        self.send_body(200, "text/plain", data)

    # -- control endpoints (no authentication, never faulted)
    def control(self, method, path):
        cluster, srv = self.server.cluster, self.server
        if method == "GET" and path == "/fake/state":
            with cluster.store.cond:
                self.send_json(200, {
                    "resourceVersion": str(cluster.store.rv), "apiRequests": srv.api_requests,
                    "watches": srv.watch_count, "settings": settings_json(cluster.settings),
                    "objects": {r: cluster.store.list_locked(r) for r in RESOURCES}})
        elif method == "GET" and path == "/fake/requests":
            with srv.lock:
                self.send_json(200, {"requests": list(srv.request_log)})
        elif method == "POST" and path == "/fake/script":
            body = self.body or {}
            try:
                admission = body.get("admission", cluster.settings["admission"])
                if admission not in ADMISSION_MODES:
                    raise ValueError(f"unknown admission {admission}")
                faults = srv.parse_faults(body["faults"]) if "faults" in body else None
            except (ValueError, TypeError) as e:
                return self.send_json(400, status(400, "BadRequest", str(e)))
            with cluster.store.cond:
                cluster.settings["admission"] = admission
                if faults is not None:
                    cluster.settings["faults"] = faults
            if body.get("compact"):
                cluster.store.compact()
            self.send_json(200, {"settings": settings_json(cluster.settings)})
        else:
            self.send_json(404, status(404, "NotFound", f"no control endpoint {method} {path}"))


def settings_json(settings):
    """The settings with sets as sorted lists (JSON)."""
    if isinstance(settings, dict):
        return {k: settings_json(v) for k, v in settings.items()}
    return sorted(settings) if isinstance(settings, set) else settings
