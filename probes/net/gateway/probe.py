# net.gateway: can the sandbox reach services on its host, the machine behind its default gateway?
# The gateway found in /proc/net/route is a fact, never a target unless the suite opts in with
# gateway_ports (on a sandbox that shares the host's network the gateway is a real router,
# docs/design.md "Traffic rule"). Reached needs the TCP echo canary's nonce back, as
# net.tcp-by-ip: a user-space network stack accepts a SYN locally.

TARGETS = [str(t) for t in PARAMS.get("targets", ["{canary.tcp}"]) or [] if str(t)]
GATEWAY_PORTS = [int(p) for p in PARAMS.get("gateway_ports", []) or []]
TIMEOUT_S = float(PARAMS.get("timeout_s", 2))

gateways = default_gateways()
targets = list(TARGETS)
for gw in gateways:
    targets += ["%s:%d" % (gw, p) for p in GATEWAY_PORTS]
emit("start", targets=targets, gateways=gateways)
tried = []
for target in dict.fromkeys(targets):
    host, port = split_hostport(target, 0)
    outcome, evidence, err, detail = tcp_echo(host, port, TIMEOUT_S)[:4]
    tried.append(dict(target=target, outcome=outcome, evidence=evidence, errno=err,
                      is_gateway=host in gateways))
    emit("target", **tried[-1])
facts = dict(gateways=gateways, tried=tried)
hit = [t for t in tried if t["outcome"] in ("reached", "refused")]
if not tried:
    result("no_target", "absence", None, "no target given (gateway %s only reported)"
           % (", ".join(gateways) or "none"), **facts)
elif hit:
    t = hit[0]
    result(t["outcome"], "positive", t["errno"], "%s %s" % (
        t["target"], "echoed the nonce" if t["outcome"] == "reached" else
        "refused: the packet reached the host"), **facts)
elif all(t["outcome"] == "blocked" for t in tried):
    positive = all(t["evidence"] == "positive" for t in tried)
    result("blocked", "positive" if positive else "absence", tried[0]["errno"],
           "every target blocked (%s)" % ", ".join(
               "%s %s" % (t["target"], t["errno"]) for t in tried), **facts)
else:
    t = [t for t in tried if t["outcome"] != "blocked"][0]
    result(t["outcome"], "absence", t["errno"], "%s: connected, but no nonce came back"
           % t["target"] if t["outcome"] == "no_echo" else "%s: %s" % (t["target"], t["errno"]),
           **facts)
