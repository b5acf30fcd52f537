# net.icmp: an echo request carrying the nonce, through a ping socket and a raw socket. Many
# egress filters are written for TCP and UDP only; ICMP echo data is a channel of its own. The
# harness's ICMP canary logs the request (the proof); the reply the probe reads is only a fact.
import select, struct, time

TARGET = str(PARAMS.get("target", "{canary.icmp}")).strip()
TIMEOUT_S = float(PARAMS.get("timeout_s", 2))
DATA = ("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode()
REFUSALS = ("EACCES", "EPERM", "EPROTONOSUPPORT", "EAFNOSUPPORT", "ESOCKTNOSUPPORT")


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def echo_request(ident, seq):
    head = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    return struct.pack("!BBHHH", 8, 0, checksum(head + DATA), ident, seq) + DATA


def ping_group_range():
    """The groups allowed ping sockets in this network namespace ([low, high]; low > high: none)."""
    try:
        with open("/proc/sys/net/ipv4/ping_group_range") as f:
            return [int(v) for v in f.read().split()]
    except (OSError, ValueError):
        return None


def ping(kind):
    """One echo request through a socket of `kind` ("ping" or "raw") -> a step."""
    step = dict(socket=kind)
    stype = socket.SOCK_DGRAM if kind == "ping" else socket.SOCK_RAW
    try:
        sock = socket.socket(socket.AF_INET, stype, socket.IPPROTO_ICMP)
    except OSError as exc:
        step.update(outcome="refused_socket", errno=errno_name(exc))
        return step
    with sock:
        ident, seq = os.getpid() & 0xffff, 1
        try:
            sock.sendto(echo_request(ident, seq), (TARGET, 0))
        except OSError as exc:
            step.update(outcome="send_failed", errno=errno_name(exc))
            return step
        step["sent"] = True
        until = time.monotonic() + TIMEOUT_S
        while True:
            left = until - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                step.update(outcome="no_reply", errno="ETIMEDOUT")
                return step
            try:
                packet, peer = sock.recvfrom(4096)
            except OSError as exc:
                step.update(outcome="recv_failed", errno=errno_name(exc))
                return step
            if kind == "raw":  # a raw socket reads the IP header too, and every ICMP packet
                packet = packet[(packet[0] & 0x0f) * 4:]
            if len(packet) >= 8 and packet[0] == 0 and NONCE.encode() in packet[8:]:
                step.update(outcome="replied", errno=None, reply_from=peer[0],
                            reply_bytes=len(packet))
                return step
            if len(packet) >= 8 and packet[0] == 3 and kind == "raw":  # destination unreachable
                step.update(outcome="unreachable", errno="EHOSTUNREACH", code=packet[1])
                return step


emit("start", target=TARGET)
if not TARGET:
    result("no_target", "absence", None, "no target given (the ICMP canary needs CAP_NET_RAW; set "
           "params.target)")
else:
    try:
        socket.inet_aton(TARGET)
    except OSError:
        result("error", "absence", "EINVAL", "target must be an IPv4 address, not %r" % TARGET[:64])
        raise SystemExit(0)
    steps = [ping("ping"), ping("raw")]
    facts = dict(target=TARGET, steps=steps, ping_group_range=ping_group_range())
    replied = [s["socket"] for s in steps if s["outcome"] == "replied"]
    positive = ("ENETUNREACH", "EHOSTUNREACH", "EPERM", "EACCES") + REFUSALS
    if replied:
        result("replied", "positive", None, "an echo reply carrying the nonce came back through "
               "the %s socket(s)" % " and ".join(replied), **facts)
    elif all(s["errno"] in positive for s in steps):
        result("blocked", "positive", ",".join(sorted({s["errno"] for s in steps})),
               "; ".join("%s socket: %s %s" % (s["socket"], s["outcome"], s["errno"])
                         for s in steps), **facts)
    else:
        result("blocked", "absence", ",".join(sorted({s["errno"] or "" for s in steps})),
               "; ".join("%s socket: %s %s" % (s["socket"], s["outcome"], s["errno"])
                         for s in steps), **facts)
