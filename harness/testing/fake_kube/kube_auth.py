"""Who calls the FAKE Kubernetes API server and what it answers about their rights (tests only).

Authentication over TLS: the kubeconfig's bearer token or client certificate (CN=sandprobe,
signed by the fake's CA) is the administrator; a bearer token of the --reviews table is the user
that table names (a service account's token, as cred.sa-token-power sends it); anything else is
401 Unauthorized (no anonymous user). There is NO authorization: every authenticated request is
allowed. The fault `forbid=PATH_REGEX` scripts a 403 in the RBAC authorizer's words; real RBAC
is the real cluster's.

The self-subject reviews (authorization.k8s.io/v1) are answered from the table the test gives
with --reviews FILE (JSON, one entry per bearer token), not computed:
  {"<token>": {"user": "system:serviceaccount:sandprobe:reader",
               "rules": {SelfSubjectRulesReview status: resourceRules, nonResourceRules,
                         incomplete, evaluationError?},
               "access": [{"resourceAttributes": {namespace, verb, group, resource,
                                                  subresource, name} (or
                           "nonResourceAttributes": {path, verb}), "status": {allowed, reason?}}]}}
A rules review is the entry's "rules" in the real envelope, whatever the namespace asked; an
access review is the status of the first item whose attributes all equal the request's (a
missing one counts as ""), else {"allowed": false}. A caller without an entry (the administrator)
gets an evaluationError saying nothing was scripted (and a rules review marked incomplete).
"""
import copy
import json

from kube_store import ApiError

ADMIN = "kubernetes-admin"
AUTHZ_GV = "authorization.k8s.io/v1"
REVIEWS = {"selfsubjectrulesreviews": "SelfSubjectRulesReview",
           "selfsubjectaccessreviews": "SelfSubjectAccessReview"}
RESOURCE_FIELDS = ("namespace", "verb", "group", "resource", "subresource", "name")
UNSCRIPTED = "fake-kube: no --reviews answer for this caller"


def load_reviews(path):
    """The --reviews table: {token: {"user", "rules", "access"}}; ValueError if malformed."""
    if not path:
        return {}
    with open(path) as f:
        table = json.load(f)
    if not isinstance(table, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("user"), str) for e in table.values()):
        raise ValueError(f"--reviews {path}: want {{token: {{\"user\": ..., ...}}}}")
    return table


def request_attributes(method, path, query):
    """The authorizer's attributes of one API request: verb, group, resource, subresource,
    namespace, name (a resource request), or verb and path (any other URL)."""
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", "v1"] and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return {"verb": method.lower(), "path": path}
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    elif len(rest) == 2 and rest[0] == "namespaces":  # a namespace is in itself (RequestInfo)
        ns = rest[1]
    name = rest[1] if len(rest) > 1 else None
    watch = query.get("watch") in ("1", "true", "True")
    verb = {"GET": "watch" if watch else ("get" if name else "list"), "POST": "create",
            "DELETE": "delete" if name else "deletecollection"}.get(method, method.lower())
    return {"verb": verb, "group": group, "resource": rest[0],
            "subresource": rest[2] if len(rest) > 2 else "", "namespace": ns, "name": name}


def forbidden(user, attrs):
    """403 Forbidden Status worded as the API server words an RBAC denial."""
    who = f'User "{user}"'
    if "path" in attrs:
        return ApiError(403, "Forbidden", f'forbidden: {who} cannot {attrs["verb"]} path '
                        f'"{attrs["path"]}"', {})
    resource, group, name = attrs["resource"], attrs["group"], attrs["name"]
    full = resource + ("/" + attrs["subresource"] if attrs["subresource"] else "")
    qual = f"{resource}.{group}" if group else resource
    subject = f'{qual} "{name}"' if name else qual
    ns = attrs["namespace"]
    where = f'in the namespace "{ns}"' if ns else "at the cluster scope"
    return ApiError(403, "Forbidden", f'{subject} is forbidden: {who} cannot {attrs["verb"]} '
                    f'resource "{full}" in API group "{group}" {where}',
                    {"name": name or "", "group": group, "kind": resource})


def review(resource, entry, body):
    """POST selfsubjectrulesreviews / selfsubjectaccessreviews answered from the caller's --reviews
    entry (None: no entry) -> the 201 body; ApiError 400/422 as the real server."""
    spec = body.get("spec") or {}
    if resource == "selfsubjectrulesreviews":
        if not spec.get("namespace"):
            raise ApiError(400, "BadRequest", "no namespace on request")
        status = copy.deepcopy(entry["rules"]) if entry and "rules" in entry else {
            "resourceRules": [], "nonResourceRules": [], "incomplete": True,
            "evaluationError": UNSCRIPTED}
    else:
        res, nonres = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if (res is None) == (nonres is None):
            message = ('Invalid value: "null": exactly one of nonResourceAttributes or '
                       "resourceAttributes must be specified")
            raise ApiError(422, "Invalid", 'SelfSubjectAccessReview.authorization.k8s.io "" is '
                           f"invalid: spec.resourceAttributes: {message}",
                           {"group": "authorization.k8s.io", "kind": "SelfSubjectAccessReview",
                            "causes": [{"reason": "FieldValueInvalid", "message": message,
                                        "field": "spec.resourceAttributes"}]})
        key = "resourceAttributes" if res is not None else "nonResourceAttributes"
        fields = RESOURCE_FIELDS if res is not None else ("path", "verb")
        asked = res if res is not None else nonres
        status = {"allowed": False} if entry else {"allowed": False,
                                                    "evaluationError": UNSCRIPTED}
        for item in (entry or {}).get("access", []):
            given = item.get(key)
            if given is not None and all(str(given.get(f) or "") == str(asked.get(f) or "")
                                         for f in fields):
                status = copy.deepcopy(item["status"])
                break
    return {"kind": REVIEWS[resource], "apiVersion": AUTHZ_GV,
            "metadata": {"creationTimestamp": None}, "spec": copy.deepcopy(spec),
            "status": status}
