# net.policy-endport, net.policy-named-port, net.policy-ipblock-except, net.policy-peer-and and
# net.policy-sctp: one field of an allow-list NetworkPolicy per row, probed just inside and just
# outside what the suite's policy admits through it (docs/probes.md, "net.policy-*"). One body for
# the five rows: the other four probe.py are links to this file, and PROBE names the field. Every
# pair at once, each bounded by timeout_s; only the echo canary's nonce back counts.
import threading
import time

FIELDS = {"net.policy-endport": "endPort", "net.policy-named-port": "named port",
          "net.policy-ipblock-except": "ipBlock except",
          "net.policy-peer-and": "namespaceSelector AND podSelector",
          "net.policy-sctp": "SCTP port"}
IPPROTO_SCTP = 132  # socket.IPPROTO_SCTP, absent from Python builds without SCTP headers


MAX_PAIRS = 32  # per side: the result record stays far under the 64 KiB a record may take
# Failures that say the packet was turned away or went unanswered: the pair was tried and held.
# Anything else (a local EMFILE, a thread still running) leaves the pair unchecked.
HELD = ("ECONNREFUSED", "TimeoutError", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPERM",
        "EACCES", "ECONNRESET")
NO_PROTOCOL = ("EPROTONOSUPPORT", "ESOCKTNOSUPPORT")


def parse_pair(side, text):
    """"name=ip:port/proto" -> a pair dict, or None: name 1-63 characters, an IP literal (never a
    name: nothing is looked up), port 1-65535 in ASCII digits, proto tcp, udp or sctp (any case)."""
    name, _, rest = str(text).partition("=")
    where, _, proto = rest.rpartition("/")
    host, _, port = where.rpartition(":")
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return None
    if not 0 < len(name) <= 63 or not (port.isascii() and port.isdigit() and len(port) <= 5) \
            or not 0 < int(port) < 65536 or proto.lower() not in ("tcp", "udp", "sctp"):
        return None
    return dict(side=side, name=name, host=host, port=int(port), proto=proto.lower(),
                answered=False, errno=None, connected=False, done=False)


def try_pair(p, timeout, line):
    """One exchange; fills answered, errno, connected, and done last."""
    kind = socket.SOCK_DGRAM if p["proto"] == "udp" else socket.SOCK_STREAM
    try:
        with socket.socket(socket.AF_INET6 if ":" in p["host"] else socket.AF_INET, kind,
                           IPPROTO_SCTP if p["proto"] == "sctp" else 0) as s:
            s.settimeout(timeout)
            s.connect((p["host"], p["port"]))
            s.send(line)
            p["connected"], reply = True, b""
            while NONCE.encode() not in reply and len(reply) < 4096:  # bounded, as tcp_echo
                chunk = s.recv(4096)
                if not chunk and kind == socket.SOCK_STREAM:
                    break
                reply += chunk
            p["answered"] = NONCE.encode() in reply
    except OSError as exc:
        p["errno"] = errno_name(exc)
    p["done"] = True


def policy_field(field, inside, outside, timeout):
    """inside/outside: ["name=ip:port/proto"], all at once, each answered only by the echo
    canary's nonce -> ignored (an outside pair answered), unchecked (a pair neither answered nor
    held: still running, a local error), not_testable (the kernel has no such protocol:
    EPROTONOSUPPORT, nothing sent), over_blocking (outside held, an inside pair held), honored
    (inside answered, outside held)."""
    pairs, bad = [], []
    for side, given in (("inside", inside), ("outside", outside)):
        given = given if isinstance(given, list) else [given]
        for text in given[:MAX_PAIRS]:
            pair = parse_pair(side, text)
            (pairs if pair else bad).append(pair or str(text)[:80])
        if len(given) > MAX_PAIRS:
            bad.append("more than %d %s pairs" % (MAX_PAIRS, side))
    emit("start", field=field, pairs=len(pairs), timeout_s=timeout)
    if bad or {p["side"] for p in pairs} != {"inside", "outside"} or not 0 < timeout <= 30:
        return result("error", "absence", "EINVAL", "give inside and outside, each a list of at "
                      "most %d name=ip:port/proto (tcp, udp, sctp), and 0 < timeout_s <= 30%s" % (
                          MAX_PAIRS, "; not read: %s" % ", ".join(bad[:3]) if bad else ""))
    line = ("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode()
    workers = [threading.Thread(target=try_pair, args=(p, timeout, line), daemon=True)
               for p in pairs]
    end = time.monotonic() + 2 * timeout + 1
    for w in workers:
        w.start()
    for w in workers:
        w.join(max(0, end - time.monotonic()))
    snapshot = [dict(p) for p in pairs]  # a thread still running writes no more into the result
    named = lambda ps: ", ".join("%s %s:%d/%s%s" % (p["name"], p["host"], p["port"], p["proto"],
                                 "" if p["answered"] else " (%s)" % p["errno"]) for p in ps)
    held = lambda p: p["done"] and not p["answered"] and (
        p["errno"] in HELD or (p["errno"] is None and p["connected"]))
    facts = dict(field=field, pairs=snapshot)
    out = [p for p in snapshot if p["side"] == "outside" and p["answered"]]
    if out:
        return result("ignored", "positive", None, "%s not honored: outside answered: %s" % (
            field, named(out)), **facts)
    no = [p for p in snapshot if p["errno"] in NO_PROTOCOL]
    if no:
        return result("not_testable", "absence", no[0]["errno"], "not testable here: this kernel "
                      "has no %s (%s)" % (no[0]["proto"].upper(), named(no)), **facts)
    unchecked = [p for p in snapshot if not p["answered"] and not held(p)]
    if unchecked:
        return result("unchecked", "absence", unchecked[0]["errno"], "%s not judged: %s neither "
                      "answered nor held (still running, or a local error)" % (
                          field, named(unchecked)), **facts)
    refused = [p for p in snapshot if p["side"] == "inside" and not p["answered"]]
    if refused:
        return result("over_blocking", "positive", refused[0]["errno"], "%s over-blocks: inside "
                      "not answered: %s (outside held too)" % (field, named(refused)), **facts)
    result("honored", "absence", None, "%s honored: inside answered (%s); outside held (%s)" % (
        field, named(p for p in snapshot if p["side"] == "inside"),
        named(p for p in snapshot if p["side"] == "outside")), **facts)


policy_field(FIELDS.get(PROBE, PROBE), PARAMS.get("inside", []), PARAMS.get("outside", []),
             float(PARAMS.get("timeout_s", 2)))
