# net.node-local: can the script reach its own node? The API server and the kubelet listen on the
# node's address, NodePorts and host-network services too, and several CNIs leave traffic to the
# local node out of NetworkPolicy (pod-to-node is a different path from pod-to-pod). The address
# is the kubernetes driver's (downward API status.hostIP in SANDPROBE_NODE_IP; for an arm with
# kubernetes.ipFamily, status.hostIPs and that family in SANDPROBE_IP_FAMILY); the ports are the
# suite's. Only an answer counts: an HTTP status, or the echo canary's nonce.
import threading
import time

TARGETS = PARAMS.get("targets", ["api-server=6443/https", "kubelet=10250/https",
                                 "kubelet-read-only=10255/http"])
INCLUDE_GATEWAY = PARAMS.get("include_gateway", False)
TIMEOUT_S = float(PARAMS.get("timeout_s", 2))
KINDS = ("https", "http", "echo")
# A refusal is not among them: a closed port on the node refuses as a policy's REJECT does, so
# only the control reaching the same pair makes a refusal count (absence, judged with it).
POSITIVE = ("ENETUNREACH", "EHOSTUNREACH", "EPERM", "EACCES")


def parse_target(text):
    """"name=port/kind" -> (name, port, kind), or None."""
    name, _, rest = str(text).partition("=")
    port, _, kind = rest.partition("/")
    if not name or not port.isdigit() or not 0 < int(port) < 65536 or kind not in KINDS:
        return None
    return name, int(port), kind


def try_pair(address, name, port, kind):
    """One address and target -> a row for the report."""
    if kind == "echo":
        outcome, _, err, detail, facts = tcp_echo(address, port, TIMEOUT_S)
        answered = outcome == "reached"
    else:
        outcome, _, err, detail, facts = http_get(address, port, "/healthz", TIMEOUT_S,
                                                  tls=kind == "https")
        answered = outcome == "reached"
    return dict(name=name, address=address, port=port, kind=kind, answered=answered,
                errno=err, detail=detail, status=facts.get("status"),
                connected=facts.get("connected", False))


def ipv6_default_gateways():
    """The next hops of the IPv6 default routes (/proc/net/ipv6_route: destination ::/0); a
    link-local one with its interface as the scope ("fe80::1%eth0"), without which connect()
    fails (EINVAL) and nothing is sent."""
    found = []
    try:
        with open("/proc/net/ipv6_route") as f:
            for line in f:
                cols = line.split()
                if len(cols) >= 10 and cols[0] == "0" * 32 and cols[1] == "00" and \
                        cols[4] != "0" * 32:
                    hop = ipaddress.ip_address(bytes.fromhex(cols[4]))
                    found.append("%s%%%s" % (hop, cols[9]) if hop.is_link_local else str(hop))
    except (OSError, ValueError):
        pass
    return list(dict.fromkeys(found))


def node_addresses():
    """-> (what the driver gave, the arm's family or "", the node's addresses to try)."""
    given = os.environ.get("SANDPROBE_NODE_IP", "")
    family = os.environ.get("SANDPROBE_IP_FAMILY", "")
    found = [a.strip() for a in given.split(",") if a.strip()]
    if family in ("IPv4", "IPv6"):
        found = [a for a in found if (":" in a) == (family == "IPv6")]
    return given, family, found


def main():
    node_ip, family, addresses = node_addresses()
    gateways = ipv6_default_gateways() if family == "IPv6" else default_gateways()
    if INCLUDE_GATEWAY:
        addresses += [g for g in gateways if g not in addresses]
    targets = [parse_target(t) for t in (TARGETS if isinstance(TARGETS, list) else [TARGETS])]
    emit("start", node_ip=node_ip, family=family, gateways=gateways, addresses=addresses,
         targets=TARGETS)
    if None in targets:
        result("error", "absence", "EINVAL", "a target is not name=port/kind (kinds: %s)" %
               ", ".join(KINDS), targets=TARGETS)
        return
    if not addresses or not targets:
        result("no_target", "absence", None, "no node address%s (SANDPROBE_NODE_IP %s) or no "
               "target" % (" of family " + family if family else "",
                           repr(node_ip[:80]) if node_ip else "unset: not the kubernetes driver?"),
               node_ip=node_ip, family=family, gateways=gateways)
        return
    rows, lock = [], threading.Lock()

    def run(*pair):
        row = try_pair(*pair)
        with lock:
            rows.append(row)

    workers = [threading.Thread(target=run, args=(a,) + t, daemon=True)
               for a in addresses for t in targets]
    for w in workers:
        w.start()
    deadline = time.monotonic() + 3 * TIMEOUT_S + 1  # connect, handshake, read: each bounded
    for w in workers:
        w.join(max(0, deadline - time.monotonic()))
    rows.sort(key=lambda r: (addresses.index(r["address"]), r["port"]))
    # "10.0.0.5 api-server:6443 (HTTP 401), nodeport:30700 (echo); 10.0.0.1 ...": short enough
    # for a reason, every pair that answered named by address and port.
    reached = []
    for address in addresses:
        got = ["%s:%d (%s)" % (r["name"], r["port"], "HTTP %s" % r["status"] if r["status"]
                               else "echo") for r in rows if r["answered"] and r["address"] == address]
        if got:
            reached.append("%s %s" % (address, ", ".join(got)))
    facts = dict(node_ip=node_ip, family=family, gateways=gateways, addresses=addresses, pairs=rows,
                 unfinished=len(workers) - len(rows))
    if reached:
        result("reached", "positive", None, "answered: " + "; ".join(reached), **facts)
        return
    unsent = sorted("%s %s:%d" % (r["name"], r["address"], r["port"]) for r in rows
                    if r["errno"] == "EINVAL")  # an address connect() refused: nothing went out
    if unsent:
        result("error", "absence", "EINVAL", "nothing was sent to %s: the address was refused "
               "as invalid" % ", ".join(unsent), **facts)
        return
    evidence = "positive" if not facts["unfinished"] and all(
        r["errno"] in POSITIVE for r in rows) else "absence"
    result("held", evidence, None, "no node address answered on %s" % ", ".join(
        "%s=%d" % (t[0], t[1]) for t in targets), **facts)


main()
