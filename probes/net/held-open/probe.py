# net.held-open: does a connection opened before the policy held keep working after it holds?
# A fresh pod can run for seconds before its controller programs the policy (kube-router: the
# fresh-pod gap); connection tracking then accepts packets of flows it already knows, so a flow
# opened in the gap may outlive it (kube-network-policies added a "strict mode" for this). The
# probe opens its flows first, waits until a new connection fails, then sends the nonce over the
# old ones. The canary's log of a " held" nonce is the proof; the echo is the probe's own view.

import time

TCP_TARGET = PARAMS.get("tcp_target", "{canary.cluster.tcp}")
UDP_TARGET = PARAMS.get("udp_target", "{canary.cluster.udp}")
HOLD_S = float(PARAMS.get("hold_s", 6))
POLL_S = float(PARAMS.get("poll_s", 0.5))
TIMEOUT_S = float(PARAMS.get("timeout_s", 1.5))
TAG = "SANDPROBE %s %s" % (NONCE, INVOCATION)
ECHO = ("SANDPROBE-ECHO %s %s" % (NONCE, INVOCATION)).encode()


def read_line(sock):
    """One line back, bounded -> (bytes, errno name or None)."""
    reply = b""
    try:
        while b"\n" not in reply and len(reply) < 4096:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    except OSError as exc:
        return reply, errno_name(exc)
    return reply, None


def open_tcp(host, port):
    """The held flow -> (socket or None, facts)."""
    try:
        sock = socket.create_connection((host, port), timeout=TIMEOUT_S)
    except OSError as exc:
        outcome, evidence, name, detail = net_failure(exc, host)
        return None, dict(opened=False, outcome=outcome, evidence=evidence, errno=name,
                          detail=detail)
    try:
        sock.sendall((TAG + " hold\n").encode())
    except OSError as exc:
        sock.close()
        return None, dict(opened=False, errno=errno_name(exc), detail="connected, send failed")
    reply, err = read_line(sock)
    if ECHO not in reply:
        sock.close()
        return None, dict(opened=False, connected=True, errno=err,
                          detail="connected, but no nonce came back")
    return sock, dict(opened=True)


def open_udp(host, port):
    """The held datagram flow: one datagram out, its echo back -> (socket or None, facts)."""
    sock = None
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                             socket.SOCK_DGRAM)
        sock.settimeout(TIMEOUT_S)
        sock.connect((host, port))
        sock.send((TAG + " hold").encode())
        reply = sock.recv(4096)
    except OSError as exc:
        if sock is not None:
            sock.close()
        return None, dict(opened=False, errno=errno_name(exc))
    if ECHO not in reply:
        sock.close()
        return None, dict(opened=False, errno=None, detail="an answer without the nonce")
    return sock, dict(opened=True)


def new_udp_flow(host, port, timeout):
    """A fresh UDP socket (a new source port: a flow connection tracking has not seen) -> True
    when its datagram came back."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                           socket.SOCK_DGRAM) as sock:
            sock.settimeout(timeout)
            sock.connect((host, port))
            sock.send(TAG.encode())
            return ECHO in sock.recv(4096)
    except OSError:
        return False


def late_tcp(sock):
    """The nonce over the old TCP flow -> facts (echoed: the answer came back)."""
    try:
        sock.sendall((TAG + " held\n").encode())
    except OSError as exc:
        return dict(echoed=False, errno=errno_name(exc))
    reply, err = read_line(sock)
    return dict(echoed=ECHO in reply, errno=err, reply_bytes=len(reply))


def late_udp(sock):
    try:
        sock.send((TAG + " held").encode())
        reply = sock.recv(4096)
    except OSError as exc:
        return dict(echoed=False, errno=errno_name(exc))
    return dict(echoed=ECHO in reply, errno=None, reply_bytes=len(reply))


def main():
    if not TCP_TARGET:
        result("error", "absence", "EINVAL", "no tcp_target")
        return
    host, port = split_hostport(TCP_TARGET, 7000)
    emit("start", tcp_target=TCP_TARGET, udp_target=UDP_TARGET, hold_s=HOLD_S)
    t0 = time.monotonic()
    tcp, tcp_open = open_tcp(host, port)
    udp, udp_open = (None, dict(opened=False, errno=None, detail="no udp_target"))
    udp_host, udp_port = None, None
    if UDP_TARGET:
        udp_host, udp_port = split_hostport(UDP_TARGET, 7001)
        udp, udp_open = open_udp(udp_host, udp_port)
    facts = dict(tcp_target=TCP_TARGET, udp_target=UDP_TARGET, tcp_opened=tcp_open,
                 udp_opened=udp_open, opened_after_s=round(time.monotonic() - t0, 3))
    if tcp is None and udp is None:
        if tcp_open.get("connected"):  # something answered the SYN without the canary's echo
            result("error", "absence", tcp_open.get("errno"), "connected, but no nonce came back",
                   **facts)
            return
        evidence = tcp_open.get("evidence", "absence")
        result("never_opened", evidence, tcp_open.get("errno"),
               "no flow could be opened: the policy held from the first instant", **facts)
        return
    emit("opened", tcp=tcp is not None, udp=udp is not None)
    # Each protocol with an old flow is held once a NEW flow of it fails: TCP by a refused,
    # unreachable or timed-out connect, UDP by a fresh socket's datagram that gets no echo.
    held = {k: None for k, s in (("tcp", tcp), ("udp", udp)) if s is not None}
    held_by, attempts = {}, 0
    while None in held.values() and time.monotonic() - t0 + POLL_S < HOLD_S:
        time.sleep(POLL_S)
        attempts += 1
        left = max(0.2, min(TIMEOUT_S, HOLD_S - (time.monotonic() - t0)))
        if "tcp" in held and held["tcp"] is None:
            outcome, _, name, _, _ = tcp_echo(host, port, left)
            if outcome in ("blocked", "refused"):
                held["tcp"] = round(time.monotonic() - t0, 3)
                held_by["tcp"] = dict(outcome=outcome, errno=name)
        if "udp" in held and held["udp"] is None and not new_udp_flow(udp_host, udp_port, left):
            held["udp"] = round(time.monotonic() - t0, 3)
    facts.update(new_connections=attempts, held_after_s=held, held_by=held_by)
    if attempts == 0:
        result("error", "absence", None, "hold_s (%g s) ended before a new flow was tried" %
               HOLD_S, **facts)
        return
    # Over every old flow, held or not: on a control (nothing held) the canary's held-nonce log
    # is exercised as on a candidate.
    late = {}
    if tcp is not None:
        late["tcp"] = late_tcp(tcp)
    if udp is not None:
        late["udp"] = late_udp(udp)
    for s in (tcp, udp):
        if s is not None:
            s.close()
    facts.update(late=late, sent_after_s=round(time.monotonic() - t0, 3))
    still_open = sorted(k for k, v in held.items() if v is None)
    kept = sorted(k for k, v in late.items() if v["echoed"])
    if still_open:
        result("open", "positive", None, "new %s flows still opened after %g s: nothing held "
               "them" % (" and ".join(still_open), HOLD_S), **facts)
    elif kept:
        result("kept", "positive", None, "new flows were held (%s), but the nonce went over the "
               "old %s flow and came back" % (", ".join("%s after %.1f s" % kv for kv in
                                                         sorted(held.items())),
                                              " and ".join(kept)), **facts)
    else:
        result("cut", "absence", None, "new flows were held and the old ones went quiet (the "
               "canary's log decides)", canary_decides=True, **facts)


main()
