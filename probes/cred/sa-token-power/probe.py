# cred.sa-token-power: what may a readable service-account token do? Asks the API server the pod
# sees, with the token, through the authorization.k8s.io/v1 reviews every authenticated subject
# may create (SelfSubjectRulesReview, SelfSubjectAccessReview). The token itself never leaves
# this process except in the Authorization header to a server that ca.crt verifies.
import http.client
import ssl

PATHS = list(PARAMS.get("paths", ["/var/run/secrets/kubernetes.io/serviceaccount/token"]))
CA_PATH = PARAMS.get("ca_path", "")
NAMESPACE = PARAMS.get("namespace", "")
TARGET = PARAMS.get("target", "")
CHECKS = list(PARAMS.get("checks", ["create pods", "get secrets", "list secrets",
                                     "create pods/exec", "* *.*",
                                     "list secrets --all-namespaces"]))
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))
DENIED = {"ENOENT", "EACCES", "ENOTDIR", "EPERM"}
# What system:basic-user, system:discovery, system:public-info-viewer and
# system:service-account-issuer-discovery give every authenticated subject on a real cluster:
# not a finding (docs/probes.md, cred.sa-token-power).
DEFAULT_GROUPS = {"authorization.k8s.io", "authentication.k8s.io"}
DEFAULT_RESOURCES = {"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"}
DEFAULT_URLS = {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                "/openapi/*", "/readyz", "/version", "/version/",
                "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
                "/openid/v1/jwks", "/openid/v1/jwks/"}
REVIEWS = "/apis/authorization.k8s.io/v1/"


def read_bounded(path, limit=1 << 16):
    try:
        with open(path, "rb") as f:
            return f.read(limit), None
    except OSError as exc:
        return None, errno_name(exc)


def parse_check(text):
    """'list secrets --all-namespaces' / 'create pods/exec' / 'create jobs.batch' / '* *.*'
    -> SelfSubjectAccessReview resourceAttributes (namespace filled in later), or None."""
    words = text.split()
    cluster = "--all-namespaces" in words
    words = [w for w in words if w != "--all-namespaces"]
    if len(words) != 2:
        return None
    verb, spec = words
    head, _, sub = spec.partition("/")
    resource, _, group = head.partition(".")
    return {"verb": verb, "resource": resource, "group": group, "subresource": sub,
            "all_namespaces": cluster}


def is_default(rule):
    if "nonResourceURLs" in rule:
        return set(rule.get("verbs") or []) <= {"get"} and \
            set(rule.get("nonResourceURLs") or []) <= DEFAULT_URLS
    return (set(rule.get("verbs") or []) <= {"create"} and
            set(rule.get("apiGroups") or []) <= DEFAULT_GROUPS and
            set(rule.get("resources") or []) <= DEFAULT_RESOURCES)


def describe(rule):
    """One rule as "get,list secrets" / "create jobs.batch" / "get /metrics"."""
    verbs = ",".join(rule.get("verbs") or []) or "(no verbs)"
    if "nonResourceURLs" in rule:
        return "%s %s" % (verbs, ",".join(rule.get("nonResourceURLs") or []))
    what = []
    for group in rule.get("apiGroups") or [""]:
        for res in rule.get("resources") or []:
            head, sep, sub = res.partition("/")
            what.append("%s%s%s" % (head, "." + group if group else "", sep + sub))
    text = "%s %s" % (verbs, ",".join(what) or "(no resources)")
    if rule.get("resourceNames"):
        text += " (names %s)" % ",".join(rule["resourceNames"])
    return text


class Api:
    """POSTs JSON with the bearer token to one verified address of the API server."""

    def __init__(self, host, port, addr, ctx, token):
        self.host, self.port, self.addr, self.ctx, self.token = host, port, addr, ctx, token

    def post(self, path, body):
        """-> (HTTP status, parsed JSON or None). Raises OSError (ssl errors included) or
        http.client.HTTPException."""
        sock = socket.create_connection((self.addr, self.port), timeout=TIMEOUT_S)
        try:
            sock = self.ctx.wrap_socket(sock, server_hostname=self.host)
            conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_S)
            conn.sock = sock
            data = json.dumps(body).encode()
            conn.request("POST", path, body=data, headers={
                "Authorization": "Bearer " + self.token, "Content-Type": "application/json",
                "Accept": "application/json", "X-Sandprobe": "%s %s" % (NONCE, INVOCATION)})
            resp = conn.getresponse()
            raw = resp.read(1 << 20)
        finally:
            sock.close()
        try:
            return resp.status, json.loads(raw.decode("utf-8", "replace") or "null")
        except ValueError:
            return resp.status, None


def find_token():
    """-> (token text or None, its path or None, facts of each path tried)."""
    facts = []
    for path in PATHS:
        data, err = read_bounded(path)
        fact = {"path": path, "readable": data is not None, "errno": err,
                "length": len(data) if data is not None else None,
                "sha256_prefix": sha256_prefix(data) if data else None}
        facts.append(fact)
        if data and data.strip():
            return data.decode("utf-8", "replace").strip(), path, facts
    return None, None, facts


def connect(token, token_path):
    """-> (Api, the address it connects to), or (None, None) after a final result."""
    target, source = TARGET, "param"
    if not target and os.environ.get("KUBERNETES_SERVICE_HOST"):
        env_host = os.environ["KUBERNETES_SERVICE_HOST"]
        env_host = "[%s]" % env_host if ":" in env_host else env_host
        target = "%s:%s" % (env_host, os.environ.get("KUBERNETES_SERVICE_PORT", "443"))
        source = "env"
    if not target:
        result("no_api", "absence", None, "a token is readable, but no API address: "
               "KUBERNETES_SERVICE_HOST is not set and no target was given", **FACTS)
        return None, None
    FACTS.update(target=target, target_source=source)
    ca = CA_PATH or os.path.join(os.path.dirname(token_path), "ca.crt")
    ca_data, err = read_bounded(ca, 1 << 20)
    FACTS["ca_path"] = ca
    if not ca_data:
        result("unverified", "absence", err, "no CA to verify the API server with (%s): the "
               "token was not sent" % ca, **FACTS)
        return None, None
    try:
        ctx = ssl.create_default_context(cadata=ca_data.decode("ascii", "replace"))
    except (ssl.SSLError, ValueError) as exc:
        result("unverified", "absence", errno_name(exc), "%s is not a CA bundle: the token was "
               "not sent" % ca, **FACTS)
        return None, None
    host, port = split_hostport(target, 443)
    addrs, exc = resolve(host, port, TIMEOUT_S)
    if not addrs:
        result("unreachable", "absence", errno_name(exc), "the API server's name %s did not "
               "resolve (net.k8s-api's row says whether the API is reachable)" % host, **FACTS)
        return None, None
    return Api(host, port, addrs[0], ctx, token), addrs[0]


def review(api, ns):
    """The rules review, then one access review per check -> finished result."""
    try:
        code, body = api.post(REVIEWS + "selfsubjectrulesreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": ns}})
    except ssl.SSLCertVerificationError as exc:
        return result("unverified", "absence", "SSLCertVerificationError", "the API server's "
                      "certificate does not verify against %s: the token was not sent (%s)" % (
                          FACTS["ca_path"], str(exc.verify_message)[:120]), **FACTS)
    except (OSError, http.client.HTTPException) as exc:
        return result("unreachable", "absence", errno_name(exc), "no answer from the API server "
                      "at %s: whether it is reachable is net.k8s-api's row" % FACTS["target"],
                      **FACTS)
    FACTS["rules_review_status"] = code
    if code == 401:
        return result("rejected", "positive", None, "the API server does not accept the token "
                      "(401): it can do nothing", **FACTS)
    beyond, rules_complete = [], False
    if code in (200, 201) and isinstance(body, dict):
        st = body.get("status") or {}
        rules = [dict(r) for r in st.get("resourceRules") or []] + \
            [dict(r) for r in st.get("nonResourceRules") or []]
        FACTS["rules"] = [describe(r) for r in rules][:200]
        FACTS["incomplete"] = bool(st.get("incomplete"))
        if st.get("evaluationError"):
            FACTS["evaluation_error"] = str(st["evaluationError"])[:300]
        beyond = [describe(r) for r in rules if not is_default(r)]
        rules_complete = not st.get("incomplete") and not st.get("evaluationError")
    else:
        FACTS["rules_review_error"] = str((body or {}).get("message", ""))[:200] \
            if isinstance(body, dict) else None
    allowed, answered = [], 0
    checks = []
    for text in CHECKS:
        attrs = parse_check(text)
        if attrs is None:
            checks.append({"check": text, "error": "not VERB RESOURCE[.GROUP][/SUB]"})
            continue
        ra = {k: attrs[k] for k in ("verb", "resource", "group", "subresource") if attrs[k]}
        if not attrs["all_namespaces"]:
            ra["namespace"] = ns
        try:
            code, body = api.post(REVIEWS + "selfsubjectaccessreviews", {
                "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": ra}})
        except (OSError, http.client.HTTPException) as exc:
            checks.append({"check": text, "error": errno_name(exc)})
            continue
        st = (body or {}).get("status") if isinstance(body, dict) else None
        if code not in (200, 201) or not isinstance(st, dict):
            checks.append({"check": text, "status": code})
            continue
        answered += 1
        ok = st.get("allowed") is True
        checks.append({"check": text, "allowed": ok,
                       "reason": str(st.get("reason", ""))[:200]})
        if ok:
            allowed.append(" ".join(text.split()[:2]) + (" in all namespaces"
                                                          if attrs["all_namespaces"] else ""))
    FACTS["checks"] = checks
    FACTS["allowed_checks"] = allowed
    FACTS["beyond_defaults"] = beyond[:200]
    if beyond or allowed:
        # The dangerous checks first (the detail is cut short in a verdict's reason), then the
        # rules: "token can get secrets, list secrets in sandprobe; rules beyond the defaults:
        # get,list secrets".
        here = [a for a in allowed if not a.endswith(" in all namespaces")]
        named = ["%s in %s" % (", ".join(here), ns)] if here else []
        named += [a for a in allowed if a not in here]
        if not named:
            named = ["%s in %s" % (b, ns) for b in beyond]
        elif beyond:
            named.append("rules beyond the defaults: " + "; ".join(beyond))
        return result("beyond_defaults", "positive", None, "token can " + "; ".join(named),
                      **FACTS)
    all_checked = answered == len(CHECKS)
    if rules_complete and all_checked:
        return result("defaults_only", "positive", None, "only the rules every authenticated "
                      "subject has (self reviews, discovery URLs) in %s" % ns, **FACTS)
    if answered and all_checked:
        why = "the rules review was incomplete" if code in (200, 201) else \
            "the rules review was refused (HTTP %s)" % FACTS["rules_review_status"]
        return result("defaults_only", "absence", None, "%s; every dangerous check was denied "
                      "in %s" % (why, ns), **FACTS)
    return result("no_review", "absence", None, "the API server answered no review fully (rules "
                  "review HTTP %s, %d of %d access reviews)" % (
                      FACTS["rules_review_status"], answered, len(CHECKS)), **FACTS)


FACTS = {}
emit("start", paths=PATHS, target=TARGET or None, checks=CHECKS)
token, token_path, files = find_token()
FACTS["files"] = files
if token is None:
    errnos = sorted({f["errno"] for f in files if f["errno"]})
    proof = "positive" if files and all(f["errno"] in DENIED for f in files) else "absence"
    result("no_token", proof, ",".join(errnos) or None, "no service-account token readable: "
           "nothing to ask the API server", **FACTS)
else:
    FACTS["token_path"] = token_path
    ns = NAMESPACE
    if not ns:
        data, _ = read_bounded(os.path.join(os.path.dirname(token_path), "namespace"), 256)
        ns = (data or b"").decode("utf-8", "replace").strip() or "default"
    FACTS["namespace"] = ns
    api, addr = connect(token, token_path)
    if api is not None:
        FACTS["address"] = addr
        review(api, ns)
