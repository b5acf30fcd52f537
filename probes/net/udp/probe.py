# net.udp: a UDP reach test to an IP:port (no name lookup). Sends one datagram
# "SANDPROBE <nonce> <invocation>\n" and is reached only when a datagram carrying the nonce comes
# back (the UDP echo canary answers "SANDPROBE-ECHO <nonce> <invocation>\n"): UDP has no
# handshake, so only application bytes from the far end prove the packet got there. A connected
# socket turns an ICMP port unreachable into ECONNREFUSED: reached for a real target, blocked on
# loopback (the harness guarantees a listener there, so another network stack answered).
import time

# No default target: a suite must name one (the UDP canary in tests), so a suite that forgets it
# sends nothing anywhere instead of reaching for a real address.
TARGET = PARAMS.get("target", "{canary.udp}")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))
MAX_DATAGRAMS = 64  # stray datagrams skipped while waiting for the echo


def exchange(host, port):
    """-> (outcome, evidence, errno, detail, facts)"""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_DGRAM, flags=socket.AI_NUMERICHOST)[0]
    except (socket.gaierror, UnicodeError) as exc:
        return "error", "absence", errno_name(exc), "target must be IP:port (no name lookup)", {}
    message = ("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode()
    replies, foreign = 0, 0
    try:
        with socket.socket(family, kind, proto) as sock:
            sock.connect(addr)  # only the target's datagrams arrive; ICMP errors are reported
            sock.send(message)
            deadline = time.monotonic() + TIMEOUT_S
            while replies < MAX_DATAGRAMS:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                try:
                    reply = sock.recv(2048)
                except TimeoutError:
                    break
                replies += 1
                if NONCE.encode() in reply:
                    return "reached", "positive", None, "the far end sent the nonce back", dict(
                        replies=replies, foreign_replies=foreign, canary_echo=reply.rstrip(
                            b"\r\n") == ("SANDPROBE-ECHO %s %s" % (NONCE, INVOCATION)).encode())
                foreign += 1
    except OSError as exc:
        return net_failure(exc, host) + (dict(replies=replies, foreign_replies=foreign),)
    if replies:
        return "no_echo", "absence", None, "%d datagram(s) came back, none with the nonce" \
            % replies, dict(replies=replies, foreign_replies=foreign)
    return "blocked", "absence", "TimeoutError", "no answer within the timeout", dict(
        replies=0, foreign_replies=0)


emit("start", target=TARGET, timeout_s=TIMEOUT_S)
if not TARGET:
    result("no_target", "absence", None, "no target given (set params.target)", target=None)
    raise SystemExit(0)
host, port = split_hostport(TARGET, 7)
outcome, evidence, err, detail, facts = exchange(host, port)
result(outcome, evidence, err, detail, target=TARGET, **facts)
