# net.sibling: can one sandbox of a service reach another one running at the same moment over
# the network? The runner runs two calls at once (PARAMS["concurrent_with"] names the other) and
# then a closing call that reads both results (PARAMS["previous"]). Each call of the pair listens
# on its own port and tries the other's. Traffic rule (docs/design.md): the connector tries only
# loopback and its own interfaces' subnets (a /24 at most), and of those only what `allow` admits;
# it never scans beyond, whatever the sandbox's network is.
import selectors, threading, time

CALL = int(PARAMS.get("call", 1) or 1)
PARTNER = int(PARAMS.get("concurrent_with", 0) or 0)
OVERLAP_S = min(max(float(PARAMS.get("overlap_s", 3)), 0.5), 20.0)
PORT = int(PARAMS.get("port", 0) or 0)
ALLOW = [str(a) for a in PARAMS.get("allow", ["127.0.0.0/8"]) or []]
PREVIOUS = [e for e in PARAMS.get("previous", []) or [] if isinstance(e, dict)]
MAX_CANDIDATES = 1024


def port_of(call):
    base = PORT or 20000 + int(sha256_prefix(("%s %s" % (NONCE, INVOCATION)).encode())[:8],
                               16) % 19999 * 2
    return base + call - 1


def tag(call):
    return ("SANDPROBE-SIBLING %s %s c%d\n" % (NONCE, INVOCATION, call)).encode()


def own_address_towards(ip):
    """The source address the kernel would use for ip (a UDP connect sends nothing)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((ip, 9))
            return s.getsockname()[0]
    except OSError:
        return None


def candidates():
    """-> (addresses to try, subnets they came from): 127.0.0.1 and the hosts of each link
    route's subnet (a /24 at most, around this sandbox's own address), filtered by ALLOW."""
    allowed = []
    for a in ALLOW:
        try:
            allowed.append(ipaddress.ip_network(a, strict=False))
        except ValueError:
            pass
    nets = [ipaddress.ip_network("127.0.0.1/32")]
    for r in ipv4_routes():
        if r["gateway"] != "0.0.0.0" or r["prefix"] == 0 or r["iface"] == "lo":
            continue
        net = ipaddress.ip_network("%s/%d" % (r["dest"], r["prefix"]), strict=False)
        if net.prefixlen < 24:
            mine = own_address_towards(str(next(net.hosts())))
            if not mine or ipaddress.ip_address(mine) not in net:
                continue
            net = ipaddress.ip_network(mine + "/24", strict=False)
        nets.append(net)
    addrs, used = [], []
    for net in nets:
        if str(net) in used or not any(net.subnet_of(a) for a in allowed if a.version == 4):
            continue
        used.append(str(net))
        hosts = [net.network_address] if net.prefixlen == 32 else list(net.hosts())
        addrs += [str(h) for h in hosts if str(h) not in addrs]
    return addrs[:MAX_CANDIDATES], used


def listen(box, until):
    """Accept until `until`; a peer that sends the partner's tag gets ours back."""
    try:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", port_of(CALL)))
        srv.listen(16)
        srv.settimeout(0.2)
        box["listening"] = True
    except OSError as exc:
        box["listen_errno"] = errno_name(exc)
        return
    with srv:
        while time.monotonic() < until:
            try:
                conn, peer = srv.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.settimeout(0.5)
                    line = conn.recv(256)
                    if line == tag(PARTNER):
                        conn.sendall(tag(CALL))
                        box["heard_from"] = box.get("heard_from") or peer[0]
                except OSError:
                    pass


def try_round(addrs, port, budget_s):
    """One non-blocking connect to each address, then the tag exchange on those that connect
    -> the address whose peer answered with the partner's tag, or None."""
    sel, socks = selectors.DefaultSelector(), []
    for a in addrs:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        if s.connect_ex((a, port)) in (0, _errno.EINPROGRESS):
            sel.register(s, selectors.EVENT_WRITE, a)
            socks.append(s)
        else:
            s.close()
    found, until = None, time.monotonic() + budget_s
    try:
        while socks and found is None and time.monotonic() < until:
            for key, _ in sel.select(max(until - time.monotonic(), 0.01)):
                s = key.fileobj
                sel.unregister(s)
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    continue
                try:
                    s.setblocking(True)
                    s.settimeout(0.5)
                    s.sendall(tag(CALL))
                    if s.recv(256) == tag(PARTNER):
                        found = key.data
                        break
                except OSError:
                    pass
            if not sel.get_map():
                break
    finally:
        sel.close()
        for s in socks:
            s.close()
    return found


def one_of_the_pair():
    addrs, subnets = candidates()
    emit("start", call=CALL, partner=PARTNER, port=port_of(CALL), subnets=subnets,
         candidates=len(addrs), overlap_s=OVERLAP_S)
    began = time.time()
    until = time.monotonic() + OVERLAP_S
    box = {"listening": False}
    listener = threading.Thread(target=listen, args=(box, until), daemon=True)
    listener.start()
    reached = None
    while reached is None and time.monotonic() < until:
        round_began = time.monotonic()
        reached = try_round(addrs, port_of(PARTNER), min(0.7, max(until - round_began, 0.05)))
        time.sleep(max(0.0, min(1.0 - (time.monotonic() - round_began), until - time.monotonic())))
    listener.join(max(until - time.monotonic(), 0) + 1)
    result("looked", "absence" if reached is None else "positive", box.get("listen_errno"),
           "call %d %s call %d%s" % (CALL, "reached" if reached else "did not reach", PARTNER,
                                     " at %s" % reached if reached else ""),
           call=CALL, concurrent_with=PARTNER, listening=box["listening"], reached=reached,
           heard_from=box.get("heard_from"), subnets=subnets, candidates=len(addrs),
           window=[round(began, 3), round(time.time(), 3)])


def reached_the_other(a, b):
    reached = ["call %s reached call %s at %s" % (me["call"], me["concurrent_with"], me["reached"])
               for me in (a, b) if me.get("reached")]
    if reached:
        return "sibling_reached", "positive", None, "; ".join(reached)
    return None


def not_listening(a, b):
    if not (a.get("listening") and b.get("listening")):
        return "not_listening", "absence", None, "a call of the pair could not listen (%s)" % (
            a.get("errno") or b.get("errno"))
    return None


def closing():
    judge_pair(CALL, PREVIOUS, ["subnets", "candidates"], reached_the_other, not_listening,
               nothing="nothing to reach", neither=", both listened, and neither reached the other")


if PARTNER:
    one_of_the_pair()
else:
    closing()
