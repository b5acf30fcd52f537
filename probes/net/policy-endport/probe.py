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


def policy_field(field, inside, outside, timeout):
    """Pairs "name=host:port/proto" (tcp, udp, sctp), all at once, each answered only by the echo
    canary's nonce -> honored (inside answered, outside not), ignored (an outside pair answered),
    over_blocking (outside held, an inside pair not answered), not_testable (the kernel has no
    such protocol: EPROTONOSUPPORT, nothing sent)."""
    pairs, line = [], ("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode()
    for side, given in (("inside", inside), ("outside", outside)):
        for text in given if isinstance(given, list) else [given]:
            name, _, rest = str(text).partition("=")
            where, _, proto = rest.rpartition("/")
            host, _, port = where.rpartition(":")
            pairs.append(dict(side=side, name=name, host=host.strip("[]"), proto=proto, port=int(
                port) if port.isdigit() else 0, answered=False, errno=None, connected=False))
    emit("start", field=field, inside=inside, outside=outside)
    if {p["side"] for p in pairs} != {"inside", "outside"} or not all(p["name"] and p["host"] and (
            0 < p["port"] < 65536) and p["proto"] in ("tcp", "udp", "sctp") for p in pairs):
        return result("error", "absence", "EINVAL", "give inside and outside: lists of "
                      "name=host:port/proto (tcp, udp, sctp)")
    def run(p):
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
    workers = [threading.Thread(target=run, args=(p,), daemon=True) for p in pairs]
    end = time.monotonic() + 2 * timeout + 1
    for w in workers:
        w.start()
    for w in workers:
        w.join(max(0, end - time.monotonic()))
    named = lambda ps: ", ".join("%s %s:%d/%s%s" % (p["name"], p["host"], p["port"], p["proto"],
                                 "" if p["answered"] else " (%s)" % p["errno"]) for p in ps)
    side = lambda s, answered: [p for p in pairs if p["side"] == s and p["answered"] == answered]
    facts = dict(field=field, pairs=pairs, unfinished=sum(w.is_alive() for w in workers))
    no = [p for p in pairs if p["errno"] in ("EPROTONOSUPPORT", "ESOCKTNOSUPPORT")]
    if no:
        return result("not_testable", "absence", no[0]["errno"], "not testable here: this kernel "
                      "has no %s (%s)" % (no[0]["proto"].upper(), named(no)), **facts)
    if side("outside", True):
        return result("ignored", "positive", None, "%s not honored: outside answered: %s" % (
            field, named(side("outside", True))), **facts)
    if side("inside", False):
        return result("over_blocking", "positive", side("inside", False)[0]["errno"], "%s "
                      "over-blocks: inside not answered: %s (outside held too)" % (
                          field, named(side("inside", False))), **facts)
    result("honored", "absence", None, "%s honored: inside answered (%s); outside held (%s)" % (
        field, named(side("inside", True)), named(side("outside", False))), **facts)


policy_field(FIELDS.get(PROBE, PROBE), PARAMS.get("inside", []), PARAMS.get("outside", []),
             float(PARAMS.get("timeout_s", 2)))
