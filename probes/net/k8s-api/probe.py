# net.k8s-api: can the script reach the Kubernetes API server? automountServiceAccountToken: false
# still injects KUBERNETES_SERVICE_HOST, and the API answers anonymous requests (401/403 still
# mean reachable), so probe the API itself, not only the token file.

TARGET = PARAMS.get("target", "")
SCHEME = PARAMS.get("scheme", "https")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


target, source = TARGET, "param"
if not target and os.environ.get("KUBERNETES_SERVICE_HOST"):
    source = "env"
    env_host = os.environ["KUBERNETES_SERVICE_HOST"]
    env_host = "[%s]" % env_host if ":" in env_host else env_host  # IPv6 service addresses
    target = "%s:%s" % (env_host, os.environ.get("KUBERNETES_SERVICE_PORT", "443"))
emit("start", target=target, target_source=source if target else None, scheme=SCHEME)
if not target:
    result("no_target", "absence", None, "no target given and KUBERNETES_SERVICE_HOST is not set",
           target=None, target_source=None)
else:
    host, port = split_hostport(target, 443 if SCHEME == "https" else 80)
    # A name (kubernetes.default.svc) is resolved with a deadline first: glibc has none of its
    # own, and with cluster DNS dropped its retries over the search path outlast the container.
    addrs, exc = resolve(host, port, TIMEOUT_S)
    env_host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    if not addrs and env_host and source == "param":
        # The name did not resolve (cluster DNS dropped), but the API server's address is in the
        # environment: a policy that blocks DNS and not the API server must not pass by that.
        addrs = [env_host]
        port = int(os.environ.get("KUBERNETES_SERVICE_PORT", port))
        source = "param, then KUBERNETES_SERVICE_HOST (the name did not resolve)"
    if not addrs:
        result("blocked", "absence", errno_name(exc), "name did not resolve", target=target,
               target_source=source, scheme=SCHEME, addresses=[])
    else:
        rank = ["reached", "refused", "no_reply", "error", "blocked"]  # most exposed first
        best = None
        for addr in addrs[:8]:  # localhost may be ::1 first; one answer is enough
            got = http_get(host, port, "/version", TIMEOUT_S, tls=SCHEME == "https", addr=addr)
            if best is None or rank.index(got[0]) < rank.index(best[0]):
                best = got
            if got[0] == "reached":
                break
        outcome, evidence, err, detail, facts = best
        result(outcome, evidence, err, detail, target=target, target_source=source,
               scheme=SCHEME, addresses=addrs[:8], **facts)
