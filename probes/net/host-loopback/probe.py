# net.host-loopback: services bound to the host's 127.0.0.1 are "private" only while nothing
# forwards to them. User-mode networks do: slirp4netns and pasta map 10.0.2.2 to the host's
# loopback unless told not to, Docker Desktop and podman give host.docker.internal and
# host.containers.internal. The canary listens on the host's 127.0.0.1 only: its echo coming back
# is the proof that the sandbox reached the host's loopback, whichever way.

PORT = str(PARAMS.get("port", "{canary.loopback_port}"))
PORT = int(PORT) if PORT.isdigit() else 0
GATEWAYS = list(PARAMS.get("gateways", ["127.0.0.1", "10.0.2.2", "host.docker.internal",
                                         "host.containers.internal", "default-gateway"]))
ALLOW = [str(a) for a in PARAMS.get("allow", ["127.0.0.0/8"])]
TIMEOUT_S = float(PARAMS.get("timeout_s", 2))


def hosts_file():
    """/etc/hosts as {name: [IPv4 addresses]}: names resolve here only, never through DNS."""
    names = {}
    try:
        with open("/etc/hosts") as f:
            for line in f:
                cols = line.split("#", 1)[0].split()
                for name in cols[1:]:
                    try:
                        socket.inet_aton(cols[0])
                    except OSError:
                        continue
                    names.setdefault(name.lower(), []).append(cols[0])
    except OSError:
        pass
    return names


def allowed(addr):
    if "any" in ALLOW:
        return True
    ip = ipaddress.ip_address(addr)
    for cidr in ALLOW:
        try:
            if ip in ipaddress.ip_network(cidr, strict=False):
                return True
        except ValueError:
            continue
    return False


def on_link(addr):
    """Loopback, a default gateway, or inside a link route of this sandbox's own interfaces: a
    user-mode network's gateway always is, and nothing else is contacted (an address that would
    go out through a router is not one this row is about)."""
    ip = ipaddress.ip_address(addr)
    if ip.is_loopback or addr in default_gateways():
        return True
    for r in ipv4_routes():
        if r["gateway"] == "0.0.0.0" and r["prefix"] > 0 and ip in ipaddress.ip_network(
                "%s/%d" % (r["dest"], r["prefix"]), strict=False):
            return True
    return False


def candidates():
    """[(how it was named, address)] in order, each address once."""
    hosts, out = hosts_file(), []
    for g in GATEWAYS:
        g = str(g)
        if g == "default-gateway":
            addrs = default_gateways()
        else:
            try:
                socket.inet_aton(g)
                addrs = [g]
            except OSError:
                addrs = hosts.get(g.lower(), [])
        out.extend((g, a) for a in addrs)
    seen, unique = set(), []
    for name, a in out:
        if a not in seen:
            seen.add(a)
            unique.append((name, a))
    return unique


emit("start", port=PORT, gateways=GATEWAYS, allow=ALLOW)
if not PORT:
    result("no_target", "absence", None, "no port given (params.port)")
    raise SystemExit(0)
tried, skipped = [], []
for name, addr in candidates():
    if not allowed(addr):
        skipped.append(dict(via=name, address=addr, why="outside allow"))
        continue
    if not on_link(addr):
        skipped.append(dict(via=name, address=addr, why="not on a network of this sandbox"))
        continue
    outcome, evidence, err, detail, facts = tcp_echo(addr, PORT, TIMEOUT_S)
    if outcome in ("refused", "blocked") and err == "ECONNREFUSED":
        # Something answered at that address, and nothing listens on the port there: whatever
        # it is, it does not lead to the host's loopback-only service.
        outcome, evidence, detail = "blocked", "positive", "refused: no way to the host's loopback"
    tried.append(dict(via=name, address=addr, outcome=outcome, evidence=evidence, errno=err,
                      detail=detail))
    if outcome == "reached":
        break
facts = dict(port=PORT, tried=tried, not_tried=skipped, default_gateways=default_gateways())
reached = [t for t in tried if t["outcome"] == "reached"]
if reached:
    t = reached[0]
    result("reached", "positive", None, "the host's loopback-only canary answered at %s:%d (%s)" % (
        t["address"], PORT, t["via"]), **facts)
elif not tried:
    result("no_target", "absence", None, "no address to try inside allow %s" % ALLOW, **facts)
elif any(t["outcome"] not in ("blocked",) for t in tried):
    t = [t for t in tried if t["outcome"] != "blocked"][0]
    result(t["outcome"] if t["outcome"] in ("no_echo", "error") else "error", "absence",
           t["errno"], "%s at %s: %s" % (t["outcome"], t["address"], t["detail"]), **facts)
else:
    weak = any(t["evidence"] != "positive" for t in tried)
    result("blocked", "absence" if weak else "positive",
           ",".join(sorted({t["errno"] or "" for t in tried})),
           "; ".join("%s (%s): %s" % (t["address"], t["via"], t["errno"]) for t in tried), **facts)
