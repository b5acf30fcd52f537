"""Authentication subjects and RBAC authorization of the FAKE Kubernetes API server (tests only).

What a real API server with `--authorization-mode=Node,RBAC` does, for the subjects the fake
knows (Kubernetes API reference: rbac.authorization.k8s.io/v1, authorization.k8s.io/v1):
  - users: the kubeconfig's bearer token or client certificate is an administrator (group
    system:masters: the privileged-group authorizer allows every request before RBAC is asked);
    a service-account token is `system:serviceaccount:<ns>:<name>` in the groups
    system:serviceaccounts, system:serviceaccounts:<ns> and system:authenticated;
  - RBAC objects stored through the API (Role, RoleBinding, ClusterRole, ClusterRoleBinding) and
    the bootstrap ones every cluster starts with (bootstrap_objects(): system:basic-user,
    system:discovery, system:public-info-viewer and system:service-account-issuer-discovery
    bound to every authenticated subject / every service account, cluster-admin bound to
    system:masters, and the user-facing view / edit / admin / cluster-admin ClusterRoles, whose
    rules here are the core of the real ones, not every resource of every group);
  - a request is allowed when a rule of a role bound to the subject matches it: ClusterRoleBindings
    everywhere, RoleBindings in the request's namespace (roleRef a Role of that namespace or a
    ClusterRole); rules match verbs, apiGroups, resources (`*`, `pods/exec`, `*/exec`),
    resourceNames and nonResourceURLs (`*`, exact, or a trailing `*` prefix) as the RBAC
    authorizer's rule matching does. A denial is a 403 Status in the authorizer's words;
  - SelfSubjectRulesReview (spec.namespace required: 400 "no namespace on request") lists every
    rule bound to the caller in that namespace as resourceRules / nonResourceRules, incomplete
    false (RBAC enumerates all it knows), and evaluationError naming roles a binding refers to
    that do not exist; SelfSubjectAccessReview (exactly one of resourceAttributes and
    nonResourceAttributes, else 422) answers allowed with the reason `RBAC: allowed by
    RoleBinding "rb/ns" of Role "r" to ServiceAccount "sa/ns"`, or allowed false and no reason
    (RBAC has no opinion; nothing here denies explicitly, so `denied` never appears).
NOT modelled: escalation prevention on creating roles and bindings (the tests create them as the
administrator), aggregated ClusterRoles (aggregationRule), ServiceAccount objects (a pod may
name any serviceAccountName; its token is that account's), impersonation, anonymous requests
(no credentials: 401, where a real server with anonymous auth answers system:unauthenticated).
"""
import base64
import copy
import hashlib
import json
import os
import time

from kube_store import ApiError

RBAC_GV = "rbac.authorization.k8s.io/v1"
AUTHZ_GV = "authorization.k8s.io/v1"
REVIEWS = {"selfsubjectrulesreviews": "SelfSubjectRulesReview",
           "selfsubjectaccessreviews": "SelfSubjectAccessReview"}
ADMIN = ("kubernetes-admin", ("system:masters", "system:authenticated"))


def sa_user(ns, name):
    """The user a service-account token authenticates as: (name, groups)."""
    return (f"system:serviceaccount:{ns}:{name}",
            ("system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"))


def make_sa_token(instance, ns, name):
    """A JWT-shaped canary for service account ns/name: base64url(header).base64url(claims).
    base64url(random signature); the API accepts it as that account's bearer token."""
    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    header = b64(json.dumps({"alg": "RS256", "kid": f"fake-kube-{instance}"}).encode())
    now = int(time.time())
    claims = b64(json.dumps({
        "aud": ["https://kubernetes.default.svc.cluster.local"], "exp": now + 3600, "iat": now,
        "iss": "https://kubernetes.default.svc.cluster.local", "nbf": now,
        "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name}},
        "sub": f"system:serviceaccount:{ns}:{name}",
        "canary": f"sandprobe-fake-kube-{instance}"}).encode())
    return f"{header}.{claims}.{b64(os.urandom(64))}"


def token_fingerprint(token):
    return {"sha256": hashlib.sha256(token.encode()).hexdigest(), "length": len(token)}


def _rule(verbs, groups=None, resources=None, urls=None):
    if urls is not None:
        return {"verbs": list(verbs), "nonResourceURLs": list(urls)}
    return {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}


_READ = ("get", "list", "watch")
_WRITE = ("create", "delete", "deletecollection", "patch", "update")
_DISCOVERY = ("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
              "/openapi/*", "/readyz", "/version", "/version/")
_PUBLIC = ("/healthz", "/livez", "/readyz", "/version", "/version/")
_ISSUER = ("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
           "/openid/v1/jwks", "/openid/v1/jwks/")
_VIEW = [
    _rule(_READ, [""], ["configmaps", "endpoints", "persistentvolumeclaims", "pods",
                        "replicationcontrollers", "services", "serviceaccounts", "events",
                        "limitranges", "resourcequotas", "pods/log", "pods/status"]),
    _rule(_READ, ["apps"], ["daemonsets", "deployments", "replicasets", "statefulsets"]),
    _rule(_READ, ["batch"], ["cronjobs", "jobs"]),
    _rule(_READ, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
]
_EDIT = _VIEW + [
    _rule(_READ + _WRITE, [""], ["secrets"]),
    _rule(_WRITE, [""], ["configmaps", "endpoints", "persistentvolumeclaims", "pods",
                         "replicationcontrollers", "services"]),
    _rule(("create",), [""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
                              "serviceaccounts/token"]),
    _rule(("impersonate",), [""], ["serviceaccounts"]),
    _rule(_WRITE, ["apps"], ["daemonsets", "deployments", "replicasets", "statefulsets"]),
    _rule(_WRITE, ["batch"], ["cronjobs", "jobs"]),
    _rule(_WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
]
_ADMIN_ROLE = _EDIT + [
    _rule(_READ + _WRITE, ["rbac.authorization.k8s.io"], ["rolebindings", "roles"]),
    _rule(("create",), ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
]


def bootstrap_objects():
    """[(resource, object)]: the ClusterRoles and ClusterRoleBindings a new cluster has."""
    roles = {
        "system:basic-user": [_rule(("create",), ["authorization.k8s.io"],
                                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                              _rule(("create",), ["authentication.k8s.io"],
                                    ["selfsubjectreviews"])],
        "system:discovery": [_rule(("get",), urls=_DISCOVERY)],
        "system:public-info-viewer": [_rule(("get",), urls=_PUBLIC)],
        "system:service-account-issuer-discovery": [_rule(("get",), urls=_ISSUER)],
        "cluster-admin": [_rule(("*",), ["*"], ["*"]), _rule(("*",), urls=("*",))],
        "admin": _ADMIN_ROLE, "edit": _EDIT, "view": _VIEW,
    }
    bindings = {
        "system:basic-user": ["system:authenticated"],
        "system:discovery": ["system:authenticated"],
        "system:public-info-viewer": ["system:authenticated", "system:unauthenticated"],
        "system:service-account-issuer-discovery": ["system:serviceaccounts"],
        "cluster-admin": ["system:masters"],
    }
    boot = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    out = [("clusterroles", {"metadata": {"name": n, "labels": dict(boot)},
                             "rules": copy.deepcopy(r)}) for n, r in roles.items()]
    out += [("clusterrolebindings", {
        "metadata": {"name": n, "labels": dict(boot)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": n},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}
                     for g in groups]}) for n, groups in bindings.items()]
    return out


# ---------------------------------------------------------------------------- validation
def validate(resource, body):
    """422 Invalid for a Role/ClusterRole without verbs, a binding without a usable roleRef or
    with a subject of an unknown kind (the API server's own checks, in short)."""
    kind = {"roles": "Role", "clusterroles": "ClusterRole", "rolebindings": "RoleBinding",
            "clusterrolebindings": "ClusterRoleBinding"}[resource]
    name = (body.get("metadata") or {}).get("name", "")

    def invalid(field, message):
        raise ApiError(422, "Invalid", f'{kind}.rbac.authorization.k8s.io "{name}" is invalid: '
                       f"{field}: {message}", {"name": name, "group": "rbac.authorization.k8s.io",
                                               "kind": kind, "causes": [
                                                   {"reason": "FieldValueInvalid",
                                                    "message": message, "field": field}]})
    if not name:
        invalid("metadata.name", "Required value: name or generateName is required")
    if resource in ("roles", "clusterroles"):
        for i, rule in enumerate(body.get("rules") or []):
            if not rule.get("verbs"):
                invalid(f"rules[{i}].verbs", "Required value: verbs must contain at least one "
                        "value")
            if rule.get("nonResourceURLs") and resource == "roles":
                invalid(f"rules[{i}].nonResourceURLs", "Invalid value: namespaced rules cannot "
                        "apply to non-resource URLs")
        return
    ref = body.get("roleRef") or {}
    allowed = ("Role", "ClusterRole") if resource == "rolebindings" else ("ClusterRole",)
    if ref.get("kind") not in allowed:
        invalid("roleRef.kind", f'Unsupported value: "{ref.get("kind", "")}": supported values: '
                + ", ".join(f'"{k}"' for k in allowed))
    if not ref.get("name"):
        invalid("roleRef.name", "Required value")
    for i, s in enumerate(body.get("subjects") or []):
        if s.get("kind") not in ("User", "Group", "ServiceAccount"):
            invalid(f"subjects[{i}].kind", f'Unsupported value: "{s.get("kind", "")}"')
        if not s.get("name"):
            invalid(f"subjects[{i}].name", "Required value")
        if s.get("kind") == "ServiceAccount" and not s.get("namespace") and \
                resource == "clusterrolebindings":
            invalid(f"subjects[{i}].namespace", "Required value")


# ---------------------------------------------------------------------------- matching
def request_attributes(method, path, query):
    """The authorizer's attributes of one API request: a dict with `resource_request` and verb,
    plus group/resource/subresource/namespace/name (resource requests) or path."""
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", "v1"] and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return {"resource_request": False, "verb": method.lower(), "path": path}
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    elif len(rest) == 2 and rest[0] == "namespaces":  # the namespace object itself
        ns = rest[1]
    name = rest[1] if len(rest) > 1 else None
    watch = query.get("watch") in ("1", "true", "True")
    verb = {"GET": "watch" if watch else ("get" if name else "list"), "POST": "create",
            "PUT": "update", "PATCH": "patch",
            "DELETE": "delete" if name else "deletecollection"}.get(method, method.lower())
    return {"resource_request": True, "verb": verb, "group": group, "resource": rest[0],
            "subresource": rest[2] if len(rest) > 2 else "", "namespace": ns, "name": name}


def _has(values, want):
    return "*" in values or want in values


def rule_allows(rule, attrs):
    """RBAC's rule matching (verbs, apiGroups, resources incl. */sub, resourceNames, URLs)."""
    if not _has(rule.get("verbs") or [], attrs["verb"]):
        return False
    if not attrs["resource_request"]:
        for url in rule.get("nonResourceURLs") or []:
            if url == "*" or url == attrs["path"] or (
                    url.endswith("*") and attrs["path"].startswith(url[:-1])):
                return True
        return False
    if not _has(rule.get("apiGroups") or [], attrs["group"]):
        return False
    sub = attrs["subresource"]
    combined = attrs["resource"] + ("/" + sub if sub else "")
    if not any(r == "*" or r == combined or (sub and r == "*/" + sub)
               for r in rule.get("resources") or []):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.get("name") in names


def _subject_matches(subject, user, binding_ns):
    name, groups = user
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == name
    if kind == "Group":
        return subject.get("name") in groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return name == f"system:serviceaccount:{ns}:{subject.get('name')}"
    return False


def _describe_subject(subject, binding_ns):
    if subject.get("kind") == "ServiceAccount":
        return f'ServiceAccount "{subject["name"]}/{subject.get("namespace") or binding_ns}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


def bound_rules(store, user, namespace):
    """[(rule, source text)] of every role bound to `user` that applies in `namespace` (None:
    cluster scope only), and the errors of bindings whose role does not exist. Store lock held."""
    out, errors = [], []

    def visit(binding, ns):
        subject = next((s for s in binding.get("subjects") or []
                        if _subject_matches(s, user, ns)), None)
        if subject is None:
            return
        ref = binding.get("roleRef") or {}
        if ref.get("kind") == "Role":
            role = store.get_locked("roles", ns, ref.get("name"))
        else:
            role = store.get_locked("clusterroles", None, ref.get("name"))
        if role is None:
            errors.append(f'{ref.get("kind", "").lower()}.rbac.authorization.k8s.io '
                          f'"{ref.get("name")}" not found')
            return
        kind = "RoleBinding" if ns else "ClusterRoleBinding"
        where = f'{binding["metadata"]["name"]}/{ns}' if ns else binding["metadata"]["name"]
        source = (f'{kind} "{where}" of {ref.get("kind")} "{ref.get("name")}" to '
                  f"{_describe_subject(subject, ns)}")
        out.extend((rule, source) for rule in role.get("rules") or [])

    for b in store.list_locked("clusterrolebindings"):
        visit(b, None)
    if namespace:
        for b in store.list_locked("rolebindings", namespace):
            visit(b, namespace)
    return out, errors


def authorize(store, user, attrs):
    """-> (allowed, reason) as the union of the privileged-group and RBAC authorizers answers it.
    Store lock held."""
    if "system:masters" in user[1]:
        return True, ""
    scope = attrs.get("namespace") if attrs["resource_request"] else None
    rules, errors = bound_rules(store, user, scope)
    for rule, source in rules:
        if rule_allows(rule, attrs):
            return True, f"RBAC: allowed by {source}"
    if errors:
        return False, "RBAC: " + (errors[0] if len(errors) == 1 else
                                  "[" + ", ".join(errors) + "]")
    return False, ""


def forbidden(user_name, attrs):
    """403 Forbidden Status worded as the API server words an authorizer's denial."""
    who = f'User "{user_name}"'
    if not attrs["resource_request"]:
        return ApiError(403, "Forbidden", f'forbidden: {who} cannot {attrs["verb"]} path '
                        f'"{attrs["path"]}"', {})
    resource, group, name = attrs["resource"], attrs["group"], attrs["name"]
    full = resource + ("/" + attrs["subresource"] if attrs["subresource"] else "")
    qual = f"{resource}.{group}" if group else resource
    subject = f'{qual} "{name}"' if name else qual
    ns = attrs["namespace"]
    where = f'in the namespace "{ns}"' if ns and resource != "namespaces" else \
        "at the cluster scope"
    return ApiError(403, "Forbidden", f'{subject} is forbidden: {who} cannot {attrs["verb"]} '
                    f'resource "{full}" in API group "{group}" {where}',
                    {"name": name or "", "group": group, "kind": resource})


# ---------------------------------------------------------------------------- reviews
def _review_body(kind, body, status):
    return {"kind": kind, "apiVersion": AUTHZ_GV, "metadata": {"creationTimestamp": None},
            "spec": copy.deepcopy(body.get("spec") or {}), "status": status}


def rules_review(store, user, body):
    """POST selfsubjectrulesreviews -> the SelfSubjectRulesReview answered (201 body)."""
    ns = (body.get("spec") or {}).get("namespace") or ""
    if not ns:
        raise ApiError(400, "BadRequest", "no namespace on request")
    rules, errors = bound_rules(store, user, ns)  # system:masters: via cluster-admin's binding
    status = {"resourceRules": [], "nonResourceRules": [], "incomplete": False}
    for rule, _ in rules:
        if rule.get("nonResourceURLs"):
            status["nonResourceRules"].append({"verbs": list(rule["verbs"]),
                                               "nonResourceURLs": list(rule["nonResourceURLs"])})
        if rule.get("resources") or rule.get("apiGroups"):
            rr = {"verbs": list(rule["verbs"]), "apiGroups": list(rule.get("apiGroups") or []),
                  "resources": list(rule.get("resources") or [])}
            if rule.get("resourceNames"):
                rr["resourceNames"] = list(rule["resourceNames"])
            status["resourceRules"].append(rr)
    if errors:
        status["evaluationError"] = errors[0] if len(errors) == 1 else \
            "[" + ", ".join(errors) + "]"
    return _review_body("SelfSubjectRulesReview", body, status)


def access_review(store, user, body):
    """POST selfsubjectaccessreviews -> the SelfSubjectAccessReview answered (201 body)."""
    spec = body.get("spec") or {}
    res, nonres = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (res is None) == (nonres is None):
        message = ('Invalid value: "null": exactly one of nonResourceAttributes or '
                   "resourceAttributes must be specified")
        raise ApiError(422, "Invalid", 'SelfSubjectAccessReview.authorization.k8s.io "" is '
                       f"invalid: spec.resourceAttributes: {message}",
                       {"group": "authorization.k8s.io", "kind": "SelfSubjectAccessReview",
                        "causes": [{"reason": "FieldValueInvalid", "message": message,
                                    "field": "spec.resourceAttributes"}]})
    if res is not None:
        attrs = {"resource_request": True, "verb": res.get("verb", ""),
                 "group": res.get("group", ""), "resource": res.get("resource", ""),
                 "subresource": res.get("subresource", ""),
                 "namespace": res.get("namespace") or None, "name": res.get("name") or None}
    else:
        attrs = {"resource_request": False, "verb": nonres.get("verb", ""),
                 "path": nonres.get("path", "")}
    allowed, reason = authorize(store, user, attrs)
    status = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return _review_body("SelfSubjectAccessReview", body, status)
