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
import threading
import uuid

# resource name -> (kind, apiVersion, namespaced)
RESOURCES = {
    "namespaces": ("Namespace", "v1", False),
    "nodes": ("Node", "v1", False),
    "pods": ("Pod", "v1", True),
    "events": ("Event", "v1", True),
    "jobs": ("Job", "batch/v1", True),
    "networkpolicies": ("NetworkPolicy", "networking.k8s.io/v1", True),
    "services": ("Service", "v1", True),
    "runtimeclasses": ("RuntimeClass", "node.k8s.io/v1", False),
    "daemonsets": ("DaemonSet", "apps/v1", True),
    "roles": ("Role", "rbac.authorization.k8s.io/v1", True),
    "rolebindings": ("RoleBinding", "rbac.authorization.k8s.io/v1", True),
    "clusterroles": ("ClusterRole", "rbac.authorization.k8s.io/v1", False),
    "clusterrolebindings": ("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", False),
}


def now_rfc3339():
    """UTC now as RFC 3339 with second precision, like metav1.Time ("2024-05-01T12:00:00Z")."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text):
    """RFC 3339 'YYYY-MM-DDTHH:MM:SSZ' -> POSIX seconds (float)."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


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
def parse_label_selector(text):
    """'a=b,c!=d,e,!f' -> list of (key, op, value); op in {'=', '!=', 'exists', '!exists'}.

    Supports the equality-based syntax (`=`, `==`, `!=`), existence (`k`, `!k`) and set-based
    `k in (a,b)` / `k notin (a,b)`. Raises ApiError 400 on syntax it cannot read.
    """
    reqs = []
    text = (text or "").strip()
    parts = []
    depth = 0
    cur = ""
    for ch in text:  # split on commas outside parentheses
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    for part in parts:
        part = part.strip()
        if not part:
            continue
        words = part.split()
        if len(words) >= 2 and words[1] in ("in", "notin"):
            key = words[0]
            rest = part[len(key):].strip()[len(words[1]):].strip()
            if not (rest.startswith("(") and rest.endswith(")")):
                raise ApiError(400, "BadRequest", f"unable to parse requirement: {part}")
            values = {v.strip() for v in rest[1:-1].split(",") if v.strip()}
            reqs.append((key, words[1], values))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append((key.strip(), "!=", value.strip()))
        elif "==" in part:
            key, value = part.split("==", 1)
            reqs.append((key.strip(), "=", value.strip()))
        elif "=" in part:
            key, value = part.split("=", 1)
            reqs.append((key.strip(), "=", value.strip()))
        elif part.startswith("!"):
            reqs.append((part[1:].strip(), "!exists", None))
        else:
            reqs.append((part, "exists", None))
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, value in reqs:
        if op == "=" and labels.get(key) != value:
            return False
        if op == "!=" and labels.get(key) == value:
            return False
        if op == "exists" and key not in labels:
            return False
        if op == "!exists" and key in labels:
            return False
        if op == "in" and labels.get(key) not in value:
            return False
        if op == "notin" and key in labels and labels[key] in value:
            return False
    return True


def parse_field_selector(text):
    """'involvedObject.name=x,metadata.name!=y' -> list of (dotted path, op, value)."""
    reqs = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append((key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, value = part.split("=", 1)
            reqs.append((key.strip().rstrip("="), "=", value.strip()))
        else:
            raise ApiError(400, "BadRequest", f'invalid selector: "{part}"; can\'t understand')
    return reqs


SUPPORTED_FIELDS = {
    "metadata.name", "metadata.namespace", "involvedObject.name", "involvedObject.kind",
    "involvedObject.uid", "involvedObject.namespace", "reason", "type", "status.phase",
    "spec.nodeName",
}


def fields_match(reqs, obj):
    for path, op, value in reqs:
        cur = obj
        for key in path.split("."):
            cur = cur.get(key) if isinstance(cur, dict) else None
        cur = "" if cur is None else str(cur)
        if op == "=" and cur != value:
            return False
        if op == "!=" and cur == value:
            return False
    return True


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
        self.closed = False

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

    def list_locked(self, resource, ns=None, label_reqs=(), field_reqs=()):
        out = []
        for (ons, _), obj in sorted(self.objects[resource].items()):
            if ns is not None and RESOURCES[resource][2] and ons != ns:
                continue
            if not labels_match(label_reqs, obj["metadata"].get("labels")):
                continue
            if not fields_match(field_reqs, obj):
                continue
            out.append(copy.deepcopy(obj))
        return out

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
        out = []
        start = bisect.bisect_right(self.history, from_rv, key=lambda e: e[0])
        for rv, res, etype, obj in self.history[start:]:
            if res != resource:
                continue
            if ns is not None and RESOURCES[resource][2] and obj["metadata"].get("namespace") != ns:
                continue
            if not labels_match(label_reqs, obj["metadata"].get("labels")):
                continue
            if not fields_match(field_reqs, obj):
                continue
            out.append((rv, {"type": etype, "object": copy.deepcopy(obj)}))
        return out
