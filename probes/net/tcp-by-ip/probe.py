# net.tcp-by-ip: raw TCP to an IP:port without any name lookup. Reached only when application
# bytes carrying the nonce come back (the TCP echo canary), because proxies and user-space network
# stacks accept a SYN locally: connect() succeeding alone proves nothing.

TARGET = PARAMS.get("target", "{canary.tcp}")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


def talk(host, port):
    """-> (outcome, evidence, errno, detail, facts)"""
    try:
        sock = socket.create_connection((host, port), timeout=TIMEOUT_S)
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


host, port = split_hostport(TARGET, 80)
emit("start", target=TARGET)
outcome, evidence, err, detail, facts = talk(host, port)
result(outcome, evidence, err, detail, target=TARGET, **facts)
