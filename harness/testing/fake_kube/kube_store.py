"""Object store of the FAKE Kubernetes API server (tests only): resourceVersions, selectors, watch.

Shapes follow the real API (apimachinery):
  - every object has metadata {name, namespace?, uid, resourceVersion, creationTimestamp, labels}
  - resourceVersion is ONE global counter, rendered as a decimal string (etcd's revision)
  - a change is recorded as a WatchEvent {"type": ADDED|MODIFIED|DELETED, "object": {...}} in a
    bounded history; a watch from a resourceVersion older than the history answers 410 Expired
    ("too old resource version"), exactly as the real watch cache does.
  - errors are meta/v1 Status objects (see `status()`).
Thread safety: one Condition guards everything; watchers wait on it and are woken on each change.
"""
import bisect
import copy
import datetime
import re
import threading
import uuid

# resource name -> (kind, apiVersion, namespaced). Services are listed, read and deleted (the
# driver's cleanup lists them), never created here.
RESOURCES = {
    "namespaces": ("Namespace", "v1", False),
    "nodes": ("Node", "v1", False),
    "pods": ("Pod", "v1", True),
    "events": ("Event", "v1", True),
    "jobs": ("Job", "batch/v1", True),
    "networkpolicies": ("NetworkPolicy", "networking.k8s.io/v1", True),
    "services": ("Service", "v1", True),
}


def now_rfc3339():
    """UTC now as RFC 3339 with second precision, like metav1.Time ("2024-05-01T12:00:00Z")."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code, reason, message, details=None):
    """A meta/v1 Status failure object (what the real API server returns with a 4xx/5xx)."""
    obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code}
    if details is not None:
        obj["details"] = details
    return obj


class ApiError(Exception):
    """Raised inside the fake to answer with a Status; `headers` are extra response headers."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.body = status(code, reason, message, details)
        self.headers = headers or {}


def not_found(resource, name, group=""):
    qual = f"{resource}.{group}" if group else resource
    return ApiError(404, "NotFound", f'{qual} "{name}" not found',
                    {"name": name, "group": group, "kind": resource})


# ---------------------------------------------------------------------------- selectors
# One requirement of a label selector: `!key`, `key`, `key=v`, `key==v`, `key!=v`,
# `key in (a,b)`, `key notin (a,b)`; requirements are joined by commas (AND).
_LABEL_REQUIREMENT = re.compile(
    r"\s*(?:!\s*(?P<absent>[\w./-]+)|(?P<key>[\w./-]+)(?:\s*(?P<op>==|=|!=)\s*(?P<value>[\w.-]*)"
    r"|\s+(?P<set>in|notin)\s*\((?P<values>[^)]*)\))?)\s*(?:,|$)")


def parse_label_selector(text):
    """'a=b,c!=d,e,!f,g in (x,y)' -> [(key, op, value)], op one of '=', '!=', 'exists',
    '!exists', 'in', 'notin' (value a set). Raises ApiError 400 on syntax it cannot read."""
    reqs, pos, text = [], 0, (text or "").strip()
    while pos < len(text):
        m = _LABEL_REQUIREMENT.match(text, pos)
        if not m or m.end() == pos:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {text[pos:]}")
        pos = m.end()
        if m["absent"]:
            reqs.append((m["absent"], "!exists", None))
        elif m["set"]:
            reqs.append((m["key"], m["set"], {v.strip() for v in m["values"].split(",")}))
        elif m["op"]:
            reqs.append((m["key"], "!=" if m["op"] == "!=" else "=", m["value"]))
        else:
            reqs.append((m["key"], "exists", None))
    return reqs


def labels_match(reqs, labels):
    """True if `labels` meet every requirement of a parsed label selector."""
    labels = labels or {}
    test = {"=": lambda k, v: labels.get(k) == v, "!=": lambda k, v: labels.get(k) != v,
            "exists": lambda k, v: k in labels, "!exists": lambda k, v: k not in labels,
            "in": lambda k, v: labels.get(k) in v, "notin": lambda k, v: labels.get(k) not in v}
    return all(test[op](key, value) for key, op, value in reqs)


def parse_field_selector(text):
    """'involvedObject.name=x,metadata.name!=y' -> [(dotted path, '=' or '!=', value)]."""
    reqs = []
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        m = re.fullmatch(r"([\w.]+)\s*(!=|==|=)\s*(.*)", part)
        if not m:
            raise ApiError(400, "BadRequest", f'invalid selector: "{part}"; can\'t understand')
        reqs.append((m[1], "!=" if m[2] == "!=" else "=", m[3]))
    return reqs


SUPPORTED_FIELDS = {
    "metadata.name", "metadata.namespace", "involvedObject.name", "involvedObject.kind",
    "involvedObject.uid", "involvedObject.namespace", "reason", "type", "status.phase",
    "spec.nodeName",
}


def fields_match(reqs, obj):
    def value(path):
        cur = obj
        for key in path.split("."):
            cur = cur.get(key) if isinstance(cur, dict) else None
        return "" if cur is None else str(cur)
    return all((value(path) == want) == (op == "=") for path, op, want in reqs)


def check_field_selector(resource, reqs):
    for path, _, _ in reqs:
        if path not in SUPPORTED_FIELDS:
            raise ApiError(400, "BadRequest",
                           f'"{path}" is not a known field selector: only "metadata.name", '
                           f'"metadata.namespace" (and a few per-resource fields) for {resource}')


# ---------------------------------------------------------------------------- store
class Store:
    """All objects, the global resourceVersion counter and the watch history.

    `history_limit` bounds the event history (the watch cache); `compact()` drops all of it so a
    test can force 410 Expired for any older resourceVersion.
    """

    def __init__(self, history_limit=20000):
        self.cond = threading.Condition()
        self.rv = 0
        self.objects = {r: {} for r in RESOURCES}  # resource -> {(ns, name): obj}
        self.history = []  # [(rv, resource, type, obj)]
        self.history_limit = history_limit
        self.floor = 0  # oldest resourceVersion a watch may start from (exclusive lower bound)

    # All methods that end in _locked expect self.cond held.
    def _bump_locked(self):
        self.rv += 1
        return str(self.rv)

    def _record_locked(self, resource, etype, obj):
        self.history.append((int(obj["metadata"]["resourceVersion"]), resource, etype,
                             copy.deepcopy(obj)))
        if len(self.history) > self.history_limit:
            drop = len(self.history) - self.history_limit
            self.floor = self.history[drop - 1][0]
            del self.history[:drop]
        self.cond.notify_all()

    def create_locked(self, resource, obj):
        """Stores a new object: fills uid, resourceVersion, creationTimestamp, kind, apiVersion.

        Raises ApiError 409 AlreadyExists if the name is taken.
        """
        kind, api_version, namespaced = RESOURCES[resource]
        meta = obj.setdefault("metadata", {})
        key = (meta.get("namespace", "") if namespaced else "", meta["name"])
        if key in self.objects[resource]:
            group = api_version.split("/")[0] if "/" in api_version else ""
            qual = f"{resource}.{group}" if group else resource
            raise ApiError(409, "AlreadyExists", f'{qual} "{meta["name"]}" already exists',
                           {"name": meta["name"], "group": group, "kind": resource})
        obj["kind"] = kind
        obj["apiVersion"] = api_version
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_rfc3339())
        meta["resourceVersion"] = self._bump_locked()
        self.objects[resource][key] = obj
        self._record_locked(resource, "ADDED", obj)
        return copy.deepcopy(obj)

    def get_locked(self, resource, ns, name):
        """The stored object itself (not a copy) or None."""
        return self.objects[resource].get((ns if RESOURCES[resource][2] else "", name))

    def update_locked(self, resource, obj):
        """Records a modification of a stored object (mutated in place or replaced)."""
        meta = obj["metadata"]
        key = (meta.get("namespace", "") if RESOURCES[resource][2] else "", meta["name"])
        meta["resourceVersion"] = self._bump_locked()
        self.objects[resource][key] = obj
        self._record_locked(resource, "MODIFIED", obj)
        return copy.deepcopy(obj)

    def delete_locked(self, resource, ns, name):
        """Removes an object; returns the deleted object (a DELETED event carries a new rv)."""
        key = (ns if RESOURCES[resource][2] else "", name)
        obj = self.objects[resource].pop(key, None)
        if obj is None:
            return None
        obj["metadata"]["resourceVersion"] = self._bump_locked()
        self._record_locked(resource, "DELETED", obj)
        return copy.deepcopy(obj)

    @staticmethod
    def _selected(resource, obj, ns, label_reqs, field_reqs):
        meta = obj["metadata"]
        return ((ns is None or not RESOURCES[resource][2] or meta.get("namespace") == ns) and
                labels_match(label_reqs, meta.get("labels")) and fields_match(field_reqs, obj))

    def list_locked(self, resource, ns=None, label_reqs=(), field_reqs=()):
        """Copies of the objects in ns (None: all) that match both selectors, by (ns, name)."""
        return [copy.deepcopy(obj) for _, obj in sorted(self.objects[resource].items())
                if self._selected(resource, obj, ns, label_reqs, field_reqs)]

    def list_response_locked(self, resource, items):
        kind, api_version, _ = RESOURCES[resource]
        return {"kind": kind + "List", "apiVersion": api_version,
                "metadata": {"resourceVersion": str(self.rv)}, "items": items}

    def compact(self):
        """Drops the watch history: every resourceVersion below the current one is now 'too old'."""
        with self.cond:
            self.floor = self.rv
            self.history.clear()

    def events_since_locked(self, from_rv, resource, ns, label_reqs, field_reqs):
        """WatchEvents after from_rv for matching objects, or raises ApiError 410 if too old."""
        if from_rv < self.floor:
            raise ApiError(410, "Expired",
                           f"too old resource version: {from_rv} ({self.floor + 1})")
        start = bisect.bisect_right(self.history, from_rv, key=lambda e: e[0])
        return [(rv, {"type": etype, "object": copy.deepcopy(obj)})
                for rv, res, etype, obj in self.history[start:]
                if res == resource and self._selected(resource, obj, ns, label_reqs, field_reqs)]
