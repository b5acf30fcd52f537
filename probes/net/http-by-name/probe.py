# net.http-by-name: can the script resolve a name and get an HTTP(S) answer from it? Tries every
# address the name resolves to (localhost is often ::1 first) and keeps the most exposed result.
import http.client
import threading
import urllib.parse

URL = PARAMS.get("url", "http://localhost:80/")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))
# Most exposed first: one reached address is enough for a leak.
RANK = ["reached", "refused", "no_reply", "error", "blocked"]


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


def resolve(name, port, timeout):
    """getaddrinfo with a deadline (glibc has none of its own) -> (addresses, exception)."""
    box = {"addrs": [], "exc": TimeoutError("resolver did not answer in time")}

    def run():
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
            box["addrs"] = list(dict.fromkeys(info[4][0] for info in infos))  # keep the order
            box["exc"] = None
        except (OSError, UnicodeError) as exc:  # UnicodeError: not a valid host name
            box["exc"] = exc
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    return box["addrs"], box["exc"]


url = urllib.parse.urlsplit(URL)
tls = url.scheme == "https"
host, port = url.hostname or "", url.port or (443 if tls else 80)
path = (url.path or "/") + ("?" + url.query if url.query else "")
emit("start", url=URL, host=host)
addrs, exc = resolve(host, port, TIMEOUT_S)
if not addrs:
    result("blocked", "absence", errno_name(exc), "name did not resolve", url=URL, addresses=[])
else:
    attempts, best = [], None
    for addr in addrs[:8]:  # bounded: each address may cost a full timeout
        got = http_get(host, port, path, TIMEOUT_S, tls=tls, addr=addr)
        attempts.append({"addr": addr, "outcome": got[0], "evidence": got[1], "errno": got[2]})
        if best is None or RANK.index(got[0]) < RANK.index(best[0]):
            best = got
        if got[0] == "reached":
            break
    outcome, evidence, err, detail, facts = best
    if outcome == "blocked" and any(a["evidence"] == "absence" for a in attempts):
        evidence = "absence"  # one address that only timed out weakens the proof for the name
    result(outcome, evidence, err, detail, url=URL, addresses=addrs, attempts=attempts, **facts)
