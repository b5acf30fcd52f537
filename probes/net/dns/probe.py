# net.dns: can the script get any DNS answer for a unique per-run name? NXDOMAIN counts as reached:
# a resolver that answers is an exfiltration channel (the name itself carries data).
import struct
import time

SERVER = PARAMS.get("server", "{canary.dns}")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))
NAME = "%s.%s.sandprobe.test" % (INVOCATION, NONCE)
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def ask_server(host, port):
    """One A query over UDP -> (outcome, evidence, errno, detail, facts)."""
    qid = struct.unpack("!H", os.urandom(2))[0]
    qname = b"".join(bytes([len(label)]) + label.encode() for label in NAME.split(".")) + b"\0"
    # header: id, flags RD=1, one question; question: name, type A, class IN
    query = struct.pack("!6H", qid, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!2H", 1, 1)
    try:
        family, _, _, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            # A *connected* UDP socket turns an ICMP port unreachable into ECONNREFUSED on recv.
            sock.connect(addr)
            sock.send(query)
            deadline = time.monotonic() + TIMEOUT_S
            while True:  # skip stray datagrams; only our id with QR=1 is an answer
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                reply = sock.recv(4096)
                if len(reply) >= 12 and reply[:2] == query[:2] and reply[2] & 0x80:
                    break
    except OSError as exc:
        return net_failure(exc, host) + ({},)
    rcode = RCODES.get(reply[3] & 0xF, str(reply[3] & 0xF))
    return "reached", "positive", None, "the server answered %s" % rcode, dict(
        rcode=rcode, qname_echoed=qname in reply)


def ask_system():
    """The system resolver (nsswitch, resolv.conf) -> (outcome, evidence, errno, detail, facts)."""
    addrs, exc = resolve(NAME, None, TIMEOUT_S)
    if addrs:
        return "reached", "positive", None, "the system resolver returned addresses", dict(
            addresses=addrs)
    name = errno_name(exc)
    if name in ("EAI_NONAME", "EAI_NODATA"):
        # Inferred from getaddrinfo, so say what could answer without a network: hosts lookup.
        return "nxdomain", "positive", name, "the system resolver said the name does not exist", \
            dict(nsswitch_hosts=nsswitch_hosts())
    return "blocked", "absence", name, "no resolver answered", {}


def nsswitch_hosts():
    """The `hosts:` line of /etc/nsswitch.conf, or None."""
    try:
        with open("/etc/nsswitch.conf") as f:
            lines = [line for line in f if line.startswith("hosts:")]
    except OSError:
        return None
    return lines[0].split(":", 1)[1].split("#")[0].strip() if lines else None


emit("start", server=SERVER, name=NAME)
if not SERVER:  # no default: the system resolver may forward off the machine; ask explicitly
    result("no_target", "absence", None, 'no server given (set params.server, or "system")',
           server=SERVER, name=NAME)
    raise SystemExit(0)
if SERVER == "system":
    outcome, evidence, err, detail, facts = ask_system()
else:
    host, port = split_hostport(SERVER, 53)
    outcome, evidence, err, detail, facts = ask_server(host, port)
result(outcome, evidence, err, detail, server=SERVER, name=NAME, **facts)
