# net.metadata: can the script talk HTTP to the cloud metadata endpoint? Any HTTP status at all
# means reached: a 403 or 404 from 169.254.169.254 still proves the packets got there and back.
import http.client

TARGET = PARAMS.get("target", "169.254.169.254:80")
PATH = PARAMS.get("path", "/latest/meta-data/")
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


host, port = split_hostport(TARGET, 80)
emit("start", target=TARGET, path=PATH)
outcome, evidence, err, detail, facts = http_get(host, port, PATH, TIMEOUT_S)
result(outcome, evidence, err, detail, target=TARGET, **facts)
