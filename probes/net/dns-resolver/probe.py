# net.dns-resolver: does a query through the sandbox's own resolver (getaddrinfo, resolv.conf)
# reach a server outside? The DNS canary's log is the proof (classify: canary_hit), never the
# answer: Docker's embedded resolver, a cache or cluster DNS may answer NXDOMAIN after forwarding.
ZONE = str(PARAMS.get("zone", "sandprobe.test")).strip(".")
TRANSPORT = str(PARAMS.get("transport", "udp"))
ALLOWED = str(PARAMS.get("nameservers", ""))
TIMEOUT_S = float(PARAMS.get("timeout_s", 12))
# The trailing dot makes the name absolute: no search domain is appended, so every query the
# resolver sends is for the zone (a stub that forwards only the zone sees all of them).
NAME = "%s.%s.%s." % (INVOCATION, NONCE, ZONE)


def resolv_conf():
    """(nameservers, options) from /etc/resolv.conf; glibc asks 127.0.0.1 when none is named."""
    servers, options = [], []
    try:
        with open("/etc/resolv.conf") as f:
            for line in f:
                words = line.split("#")[0].split(";")[0].split()
                if words[:1] == ["nameserver"] and len(words) > 1:
                    servers.append(words[1])
                elif words[:1] == ["options"]:
                    options += words[1:]
    except OSError:
        pass
    return servers or ["127.0.0.1"], options


def outside(servers, allowed):
    """The servers not covered by the comma-separated addresses/CIDRs in `allowed`."""
    nets = [ipaddress.ip_network(a.strip(), strict=False) for a in allowed.split(",") if a.strip()]
    def covered(server):
        try:
            ip = ipaddress.ip_address(server.split("%")[0])
        except ValueError:
            return False
        return any(ip.version == n.version and ip in n for n in nets)
    return [s for s in servers if not covered(s)]


servers, options = resolv_conf()
facts = dict(name=NAME, zone=ZONE, transport=TRANSPORT, nameservers=servers, options=options)
emit("start", **facts)
if TRANSPORT not in ("udp", "tcp"):
    result("error", "absence", None, "transport must be udp or tcp", **facts)
    raise SystemExit(0)
if not ALLOWED:
    result("no_target", "absence", None, 'params.nameservers is empty: nothing asked (set the '
           'resolvers the sandbox may name, or "any" in production)', **facts)
    raise SystemExit(0)
if ALLOWED != "any":
    try:
        foreign = outside(servers, ALLOWED)
    except ValueError as exc:
        result("error", "absence", None, "params.nameservers: %s" % exc, **facts)
        raise SystemExit(0)
    if foreign:
        result("not_queried", "absence", None, "resolv.conf names %s, outside params.nameservers "
               "(%s): nothing asked, the query could leave the machine" % (
                   ", ".join(foreign), ALLOWED), **facts)
        raise SystemExit(0)
if TRANSPORT == "tcp":
    # glibc reads RES_OPTIONS at its first resolver call (res_init): every query over TCP.
    os.environ["RES_OPTIONS"] = (os.environ.get("RES_OPTIONS", "") + " use-vc").strip()

addrs, exc = resolve(NAME, None, TIMEOUT_S)
if addrs:
    # The canary answers NXDOMAIN: addresses came from something else (a wildcard, a hijack).
    result("resolved", "absence", None, "an answer with addresses that the canary did not send",
           addresses=addrs[:8], **facts)
else:
    name = errno_name(exc)
    if name in ("EAI_NONAME", "EAI_NODATA"):
        result("nxdomain", "absence", name, "the resolver said the name does not exist; the canary "
               "decides whether it forwarded", **facts)
    elif name in ("EAI_AGAIN", "EAI_FAIL", "TimeoutError", "EAI_SYSTEM"):
        result("no_resolver", "absence", name, "no resolver answered", **facts)
    else:
        result("error", "absence", name, "unexpected resolver error", **facts)
