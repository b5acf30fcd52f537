# --- sandprobe preamble (probes/lib/preamble.py): parameters, record writer, shared helpers.
# Records go straight to fd 1: a SIGKILL loses nothing already emitted. Never record a secret.
import base64, errno as _errno, hashlib, ipaddress, json, os, socket, sys

_CFG = json.loads(base64.b64decode(_SANDPROBE))
PROBE, NONCE, INVOCATION = _CFG["probe"], _CFG["nonce"], _CFG["invocation"]
PARAMS = dict(_CFG.get("params") or {})
MARK = "@@sandprobe"
_STATE = {"seq": 0, "result": False, "reader_gone": False, "outlive_reader": False}
os.set_blocking(1, True)  # a non-blocking stdout would turn a slow reader into lost records

def emit(kind, **fields):
    """Write one `@@sandprobe <NONCE> <compact json>` line to fd 1 at once."""
    if _STATE["reader_gone"]:
        return
    _STATE["seq"] += 1
    rec = {"kind": kind, "probe": PROBE, "seq": _STATE["seq"]}
    rec.update((k, v) for k, v in fields.items() if k not in rec)
    text = json.dumps(rec, separators=(",", ":"), ensure_ascii=True, default=str)
    line = ("%s %s %s\n" % (MARK, NONCE, text)).encode("ascii")
    while line:
        try:
            line = line[os.write(1, line):]
        except OSError:  # EPIPE/EBADF: nobody reads any more; unwind so finally blocks clean up
            _STATE["reader_gone"] = True
            if _STATE["outlive_reader"]:
                return  # a still-running probe goes on silently (outlive_reader())
            raise SystemExit(141)

def outlive_reader():
    """Keep running when nobody reads stdout any more (records are dropped): real code does not
    stop when a service stops listening, so neither may a probe whose point is to be stopped."""
    _STATE["outlive_reader"] = True

def result(outcome, evidence, errno=None, detail="", **extra):
    """The one final record. evidence: "positive" (direct proof) or "absence" (a non-event)."""
    if not _STATE["result"]:
        _STATE["result"] = True
        emit("result", outcome=outcome, evidence=evidence, errno=errno, detail=detail, **extra)

def errno_name(exc):
    """"ECONNREFUSED" for an OSError, "EAI_NONAME" for a resolver error, else the class name."""
    code = getattr(exc, "errno", None)
    if isinstance(exc, socket.gaierror):
        names = [n for n in sorted(dir(socket)) if n[:4] == "EAI_" and getattr(socket, n) == code]
        return names[0] if names else "EAI_%s" % code
    if isinstance(exc, OSError) and isinstance(code, int) and type(exc).__module__ != "ssl":
        return _errno.errorcode.get(code, "E%d" % code)  # (SSLError.errno is not an OS errno)
    return type(exc).__name__

def sha256_prefix(data):
    return hashlib.sha256(data).hexdigest()[:12]

def is_loopback(host):
    """127.0.0.0/8, ::1, ::ffff:127.x or the name localhost. Never resolves anything."""
    host = host.strip("[]").rstrip(".").lower()
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host == "localhost" or host.endswith(".localhost")
    return ip.is_loopback or bool(getattr(ip, "ipv4_mapped", None) and ip.ipv4_mapped.is_loopback)

def split_hostport(text, default_port):
    # "host:port", "[v6]:port", "host" or a bare IPv6 address -> (host, port)
    host, sep, port = text.rpartition(":")
    if not sep or "]" in port or (":" in host and not host.endswith("]")):
        return text.strip("[]"), default_port
    return host.strip("[]"), int(port)

def net_failure(exc, host):
    """A failed connect/send/recv to host -> (outcome, evidence, errno, detail)."""
    name = errno_name(exc)
    if name == "ECONNREFUSED" and is_loopback(host):  # the harness guarantees a listener there
        return "blocked", "positive", name, "refused on loopback: another network stack answered"
    if name == "ECONNREFUSED":
        return "refused", "positive", name, "refused by the target: the packet got through"
    if name in ("ENETUNREACH", "EHOSTUNREACH", "EPERM", "EACCES", "EAFNOSUPPORT", "EADDRNOTAVAIL"):
        return "blocked", "positive", name, "the network stack rejected the packet"
    if isinstance(exc, TimeoutError):
        return "blocked", "absence", name, "no answer within the timeout"
    return "error", "absence", name, "unexpected %s" % type(exc).__name__

# --- shared by the network probes (net.metadata*, net.k8s-api, net.http-by-name, net.dns,
# cred.cloud-metadata, net.tcp-by-ip, net.gateway)
def http_call(host, port, method, path, timeout, headers=None, tls=False, addr=None):
    """One request with the canary header (and `headers`) -> (outcome, evidence, errno, detail,
    facts, answer). answer is None without an HTTP answer, else (status, {lowercase header name:
    value}, body of at most 64 KiB): for the probe to inspect, never to record as it is (a
    metadata body may be a credential)."""
    import http.client
    try:
        sock = socket.create_connection((addr or host, port), timeout=timeout)
    except OSError as exc:
        return net_failure(exc, addr or host) + ({"connected": False}, None)
    try:
        if tls:  # reachability only: any certificate will do
            import ssl
            sock = ssl._create_unverified_context().wrap_socket(sock, server_hostname=host)
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn.sock = sock
        sent = {"X-Sandprobe": "%s %s" % (NONCE, INVOCATION)}
        sent.update(headers or {})
        conn.request(method, path, headers=sent)  # PUT/POST without a body: Content-Length: 0
        resp = conn.getresponse()
        try:
            body = resp.read(65536)
        except (OSError, http.client.HTTPException):
            body = b""  # the status line alone already proves the far end answered
    except (OSError, http.client.HTTPException) as exc:
        # connect() succeeding is not egress: proxies and user-space stacks accept locally
        return "no_reply", "absence", errno_name(exc), "connected, but no HTTP answer", dict(
            connected=True), None
    finally:
        sock.close()
    seen = ("sandprobe-canary " + NONCE).encode() in body
    answer = (resp.status, {k.lower(): v for k, v in resp.getheaders()}, body)
    return "reached", "positive", None, "HTTP status %d" % resp.status, dict(
        connected=True, status=resp.status, canary_nonce_seen=seen), answer

def http_get(host, port, path, timeout, tls=False, addr=None):
    """GET with the canary header -> (outcome, evidence, errno, detail, facts)."""
    return http_call(host, port, "GET", path, timeout, tls=tls, addr=addr)[:5]

def resolve(name, port, timeout):
    """getaddrinfo with a deadline (glibc has none of its own) -> (addresses, exception)."""
    import threading
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

def tcp_echo(host, port, timeout):
    """The TCP echo canary's exchange: the tagged line, one line back (bounded) -> (outcome,
    evidence, errno, detail, facts). Reached only when the nonce comes back: proxies and user-space
    network stacks accept a SYN locally, so connect() succeeding alone proves nothing."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        return net_failure(exc, host) + ({"connected": False},)
    reply, err = b"", None
    with sock:
        try:
            sock.sendall(("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode())
            while b"\n" not in reply and len(reply) < 4096:  # one line, bounded
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
        except OSError as exc:
            err = errno_name(exc)
    facts = dict(connected=True, reply_bytes=len(reply),
                 canary_echo=("SANDPROBE-ECHO %s %s" % (NONCE, INVOCATION)).encode() in reply)
    if NONCE.encode() in reply:
        return "reached", "positive", None, "the far end sent the nonce back", facts
    return "no_echo", "absence", err, "connected, but no nonce came back", facts

def tcp_beat(host, port, timeout=1):
    """One tagged line to the TCP echo canary; errors are ignored (there is nobody to tell)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode())
            s.recv(256)
    except OSError:
        pass

def heartbeat_target(text):
    """A heartbeat canary parameter -> "host:port", or "" for none: the default, "{canary.tcp}",
    left unfilled (a probe run by hand) is no address and is never looked up."""
    return "" if (text or "").startswith("{") else (text or "")

def start_heartbeats(canary, interval_s=0.5):
    """A daemon thread that sends tcp_beat to `canary` ("host:port"; "" = none) every interval_s
    for as long as this process lives. The canary stamps each beat with its own clock: a beat
    logged after the sandbox said the call ended is a process still running (classify
    still_running). Silence proves nothing: a survivor without a route is silent too."""
    if not canary:
        return
    import threading, time
    host, port = split_hostport(canary, 0)

    def beat():
        while True:
            began = time.monotonic()
            tcp_beat(host, port, timeout=interval_s)
            time.sleep(max(interval_s - (time.monotonic() - began), 0.05))
    threading.Thread(target=beat, daemon=True, name="sandprobe-heartbeat").start()

# --- shared by the cloud metadata probes (net.metadata-*, cred.cloud-metadata): requests shaped
# as each cloud's metadata service wants them (docs/probes.md, "Cloud metadata").
IMDS_TOKEN_HEADER = "X-aws-ec2-metadata-token"  # IMDSv2: every GET carries the PUT's token

def http_step(steps, name, host, port, method, path, timeout, headers=None):
    """http_call as one step of a sequence: appends its facts (no body, no header values) to
    `steps`, returns the answer (or None)."""
    outcome, evidence, err, _, facts, answer = http_call(host, port, method, path, timeout,
                                                         headers)
    steps.append(dict(step=name, method=method, path=path, outcome=outcome, evidence=evidence,
                      errno=err, status=facts.get("status"),
                      nonce_seen=facts.get("canary_nonce_seen")))
    return answer

def imds_token(steps, host, port, timeout):
    """IMDSv2's PUT for a session token -> the token or "" (recorded by its length only)."""
    answer = http_step(steps, "token", host, port, "PUT", "/latest/api/token", timeout,
                       {"X-aws-ec2-metadata-token-ttl-seconds": "60"})
    token = answer[2][:4096].decode("latin-1").strip() if answer and answer[0] == 200 else ""
    steps[-1]["token_length"] = len(token)
    return token

def imds_sequence(host, port, path, timeout):
    """GET `path` without a token (IMDSv1), IMDSv2's PUT for a token, GET `path` with it: a filter
    that stops only the tokenless GET lets the other two through. -> steps."""
    steps = []
    http_step(steps, "get-without-token", host, port, "GET", path, timeout)
    token = imds_token(steps, host, port, timeout)
    if token:
        http_step(steps, "get-with-token", host, port, "GET", path, timeout,
                  {IMDS_TOKEN_HEADER: token})
    return steps

def reach_of(steps):
    """Steps -> (outcome, evidence, errno, detail): the most exposed step decides (any HTTP answer
    is reached); all blocked is positive evidence only if every step's was."""
    rank = ["reached", "refused", "no_reply", "error", "blocked"]  # most exposed first
    best = min(steps, key=lambda s: rank.index(s["outcome"]))
    weak = best["outcome"] == "blocked" and any(s["evidence"] != "positive" for s in steps)
    detail = "; ".join("%s %s (%s): %s" % (s["method"], s["path"], s["step"], s["status"] or
                                           "%s %s" % (s["outcome"], s["errno"])) for s in steps)
    return best["outcome"], "absence" if weak else best["evidence"], best["errno"], detail

def run_metadata_probe(target, steps_of):
    """A net.metadata-* probe: start, no target -> no_target, else the steps steps_of(host, port)
    returns, judged by reach_of, in one result."""
    emit("start", target=target)
    if not target:
        return result("no_target", "absence", None, "no target given (set params.target)")
    steps = steps_of(*split_hostport(target, 80))
    result(*reach_of(steps), target=target, steps=steps,
           canary_nonce_seen=any(s["nonce_seen"] for s in steps))

# --- shared by the probes that run two calls at the same moment (state.persists, proc.sibling,
# net.sibling; docs/probes.md "The concurrent pair")
def call_tag(kind, call):
    """A process name (comm, at most 15 bytes) both calls of a concurrent pair can compute:
    kind (4 letters) + 8 hex of this run's nonce and invocation + "c<call>"."""
    return "%s%sc%d" % (kind, sha256_prefix(("%s %s" % (NONCE, INVOCATION)).encode())[:8], call)

def set_comm(name):
    """Rename this process (/proc/self/comm) -> True when it took."""
    try:
        with open("/proc/self/comm", "w") as f:
            f.write(name)
        with open("/proc/self/comm") as f:
            return f.read().strip() == name
    except OSError:
        return False

def pids_named(name):
    """Pids in this sandbox's /proc whose comm is exactly `name`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/comm" % entry) as f:
                    if f.read().strip() == name:
                        found.append(int(entry))
            except OSError:
                pass
    return found

def judge_pair(call, previous, keys, found, unready, nothing, neither):
    """The closing call of proc.sibling and net.sibling: a start record, then one result from the
    pair's two results in `previous`, each carrying the pair's values of `keys`. found(a, b): the
    result (outcome, evidence, errno, detail) when a call found the other, else None; windows that
    overlapped 0.2 s or less are not_concurrent (detail ending in `nothing`); unready(a, b): the
    result when a call could not take part, else None; else isolated (`neither` ends the detail)."""
    emit("start", call=call, pair=[e.get("call") for e in previous])
    pair = [e for e in previous if e.get("concurrent_with")]
    if len(pair) < 2:
        return result("no_pair", "absence", None, "the concurrent pair left %d result(s) of 2"
                      % len(pair))
    a, b = pair[-2], pair[-1]
    facts = dict(pair=[a.get("call"), b.get("call")])
    facts.update((k, [a.get(k), b.get(k)]) for k in keys)
    finding = found(a, b)
    if finding:
        return result(*finding, **facts)
    try:
        overlap = min(a["window"][1], b["window"][1]) - max(a["window"][0], b["window"][0])
    except (KeyError, IndexError, TypeError):
        overlap = 0
    if overlap <= 0.2:
        return result("not_concurrent", "absence", None, "calls %s and %s were not in flight "
                      "together (the service ran them one after the other): %s" % (
                          a["call"], b["call"], nothing), overlap_s=overlap, **facts)
    missing = unready(a, b)
    if missing:
        return result(*missing, **facts)
    result("isolated", "absence", None, "calls %s and %s were in flight together for %.1fs%s" % (
        a["call"], b["call"], overlap, neither), overlap_s=round(overlap, 1), **facts)

# --- shared by the lateral-movement probes (net.gateway, net.docker-api, net.sibling)
def ipv4_routes():
    """/proc/net/route -> [{"iface", "dest", "gateway", "prefix"}] (dotted quads, prefix 0..32);
    [] when the file is missing or unreadable. Reading it sends nothing."""
    routes = []
    try:
        with open("/proc/net/route") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return routes
    quad = lambda h: socket.inet_ntoa(int(h, 16).to_bytes(4, "little"))
    for line in lines:
        cols = line.split()
        if len(cols) >= 8 and len(cols[1]) == 8:
            mask = int(cols[7], 16).to_bytes(4, "little")
            routes.append(dict(iface=cols[0], dest=quad(cols[1]), gateway=quad(cols[2]),
                               prefix=bin(int.from_bytes(mask, "big")).count("1")))
    return routes

def default_gateways():
    """The next hops of the default routes (a fact to report: probes connect only to targets
    that the suite gives, never to a gateway they found, docs/design.md "Traffic rule")."""
    return list(dict.fromkeys(r["gateway"] for r in ipv4_routes()
                              if r["prefix"] == 0 and r["gateway"] != "0.0.0.0"))

def _crash(kind, exc, tb):  # an uncaught exception still ends in a result record
    result("error", "absence", errno_name(exc), "probe crashed: %s" % kind.__name__)
    sys.__excepthook__(kind, exc, tb)
sys.excepthook = _crash
