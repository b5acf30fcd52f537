# net.k8s-api: can the script reach the Kubernetes API server? automountServiceAccountToken: false
# still injects KUBERNETES_SERVICE_HOST, and the API answers anonymous requests (401/403 still
# mean reachable), so probe the API itself, not only the token file.
import http.client

TARGET = PARAMS.get("target", "")
SCHEME = PARAMS.get("scheme", "https")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


def http_get(host, port, path, timeout, tls=False, addr=None):
    """GET with the canary header -> (outcome, evidence, errno, detail, facts)."""
    try:
        sock = socket.create_connection((addr or host, port), timeout=timeout)
    except OSError as exc:
        return net_failure(exc, addr or host) + ({"connected": False},)
    try:
        if tls:  # reachability only: any certificate will do
            import ssl
            sock = ssl._create_unverified_context().wrap_socket(sock, server_hostname=host)
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn.sock = sock
        conn.request("GET", path, headers={"X-Sandprobe": "%s %s" % (NONCE, INVOCATION)})
        resp = conn.getresponse()
        try:
            body = resp.read(65536)
        except (OSError, http.client.HTTPException):
            body = b""  # the status line alone already proves the far end answered
    except (OSError, http.client.HTTPException) as exc:
        # connect() succeeding is not egress: proxies and user-space stacks accept locally
        return "no_reply", "absence", errno_name(exc), "connected, but no HTTP answer", dict(
            connected=True)
    finally:
        sock.close()
    seen = ("sandprobe-canary " + NONCE).encode() in body
    return "reached", "positive", None, "HTTP status %d" % resp.status, dict(
        connected=True, status=resp.status, canary_nonce_seen=seen)


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
    outcome, evidence, err, detail, facts = http_get(host, port, "/version", TIMEOUT_S,
                                                     tls=SCHEME == "https")
    result(outcome, evidence, err, detail, target=target, target_source=source, scheme=SCHEME,
           **facts)
