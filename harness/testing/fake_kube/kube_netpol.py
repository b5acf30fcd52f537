"""NetworkPolicy -> iptables rules for one pod netns of the FAKE cluster (docker kubelet, tests only).

Semantics follow networking.k8s.io/v1 as the API documents them (and as CNIs implement them):
  - a pod is isolated for Egress (Ingress) iff some policy of ITS namespace selects it
    (spec.podSelector: matchLabels + matchExpressions) with Egress (Ingress) in policyTypes
    (defaulted as the API server does: Ingress always, Egress when spec.egress is set);
  - isolated traffic is allowed iff ANY rule of ANY selecting policy matches (policies add up);
  - a rule's peers (`to` / `from`): ipBlock {cidr, except}; podSelector alone = pods of the
    policy's namespace; namespaceSelector (+ podSelector) = pods of the matching namespaces
    (namespaces carry kubernetes.io/metadata.name); an empty/absent peer list = anything;
  - ports: protocol TCP/UDP/SCTP (default TCP), port number or name, endPort; absent = all;
    a named port resolves against the peer pod's containerPorts (egress) or this pod's (ingress);
    a named port with an ipBlock peer cannot be resolved and is skipped (noted in the summary);
  - peers are matched against post-DNAT addresses (pod IPs), as real CNIs see them: the nat OUTPUT
    DNAT of a Service happens before the filter OUTPUT chain;
  - the cluster DNS (served by the fake on the pod network's gateway) counts as the pod
    kube-system/coredns with labels {k8s-app: kube-dns} and ports dns 53/UDP, dns-tcp 53/TCP;
  - hostNetwork pods are never selected as peers by pod/namespace selectors (as with most CNIs)
    and never filtered themselves;
  - drops are silent (DROP); loopback and ESTABLISHED,RELATED are accepted first.
"""
import ipaddress

from kube_cluster import policy_types, selector_matches

SERVICE_CIDR = "10.96.0.0/12"


def _proto_port_matches(ports, peer_pod, note):
    """Rule `ports` -> list of iptables match fragments ('' = any), for a destination pod
    (dict or None). Named ports resolve against peer_pod's containerPorts."""
    if not ports:
        return [""]
    out = []
    for p in ports:
        proto = (p.get("protocol") or "TCP").lower()
        port = p.get("port")
        if port is None:
            out.append(f"-p {proto}")
            continue
        if isinstance(port, str) and not port.isdigit():
            if peer_pod is None:
                note.append(f"named port {port!r} with a non-pod peer: skipped")
                continue
            found = [cp.get("containerPort") for c in peer_pod.get("containers", [])
                     for cp in c.get("ports") or []
                     if cp.get("name") == port and (cp.get("protocol") or "TCP").lower() == proto]
            if not found:
                continue
            port = found[0]
        port = int(port)
        end = p.get("endPort")
        rng = f"{port}:{int(end)}" if end else f"{port}"
        out.append(f"-p {proto} -m {proto} --dport {rng}")
    return out


def _peer_targets(peer, policy_ns, pods, namespaces):
    """A peer -> ('cidr', cidr, excepts) or ('pods', [pod dicts])."""
    if "ipBlock" in peer:
        b = peer["ipBlock"]
        return ("cidr", b.get("cidr"), b.get("except") or [])
    ns_sel = peer.get("namespaceSelector")
    pod_sel = peer.get("podSelector")
    if ns_sel is None:
        ns_ok = {policy_ns}
    else:
        ns_ok = {n for n, labels in namespaces.items() if selector_matches(ns_sel, labels)}
    chosen = [p for p in pods if p["ns"] in ns_ok and not p["hostNetwork"] and p["ip"]
              and selector_matches(pod_sel or {}, p["labels"])]
    return ("pods", chosen)


def _direction(pod, policies, pods, namespaces, ptype, key, peer_key, chain, addr_flag, rules,
               summary):
    """Appends the iptables lines of one direction; returns True if the pod is isolated."""
    selecting = [p for p in policies if p["metadata"]["namespace"] == pod["ns"]
                 and ptype in policy_types(p)
                 and selector_matches((p.get("spec") or {}).get("podSelector") or {},
                                      pod["labels"])]
    if not selecting:
        return [], False
    n = 0
    for pol in selecting:
        pname = pol["metadata"]["name"]
        for rule in (pol.get("spec") or {}).get(key) or []:
            n += 1
            note = []
            peers = rule.get(peer_key)
            ports = rule.get("ports")
            desc = []
            if not peers:
                for m in _proto_port_matches(ports, pod if ptype == "Ingress" else None, note):
                    rules.append(f"-A {chain} {m} -j ACCEPT".replace("  ", " "))
                desc.append("any peer")
            for j, peer in enumerate(peers or []):
                kind, *rest = _peer_targets(peer, pol["metadata"]["namespace"], pods, namespaces)
                if kind == "cidr":
                    cidr, excepts = rest
                    sub = f"{chain}-{n}-{j}"
                    rules.insert(0, f":{sub} - [0:0]")
                    for ex in excepts:
                        rules.append(f"-A {sub} {addr_flag} {ex} -j RETURN")
                    for m in _proto_port_matches(ports, pod if ptype == "Ingress" else None, note):
                        rules.append(f"-A {sub} {addr_flag} {cidr} {m} -j ACCEPT".replace("  ",
                                                                                          " "))
                    rules.append(f"-A {chain} -j {sub}")
                    desc.append(f"ipBlock {cidr}" + (f" except {excepts}" if excepts else ""))
                else:
                    (targets,) = rest
                    for t in targets:
                        ref = t if ptype == "Egress" else pod
                        for m in _proto_port_matches(ports, ref["spec"], note):
                            rules.append(f"-A {chain} {addr_flag} {t['ip']}/32 {m} "
                                         f"-j ACCEPT".replace("  ", " "))
                    desc.append("pods [" + ", ".join(f"{t['ns']}/{t['name']}={t['ip']}"
                                                      for t in targets) + "]")
            pdesc = "all ports" if not ports else ", ".join(
                f"{(p.get('protocol') or 'TCP')}/{p.get('port', '*')}"
                + (f"-{p['endPort']}" if p.get("endPort") else "") for p in ports)
            summary.append(f"{ptype} {pname} rule {n}: {'; '.join(desc) or 'no peers'} on "
                           f"{pdesc}" + (f" ({'; '.join(note)})" if note else ""))
    rules.append(f"-A {chain} -j DROP")
    summary.append(f"{ptype}: everything else DROPPED (isolated by "
                   f"{', '.join(p['metadata']['name'] for p in selecting)})")
    return [p["metadata"]["name"] for p in selecting], True


def filter_rules(pod, policies, pods, namespaces, egress_chain):
    """Rules enforcing `policies` for `pod`.

    pod/pods entries: {"ns", "name", "labels", "ip", "hostNetwork", "spec"};
    namespaces: {name: labels}. Returns (pod netns *filter lines (ingress, in INPUT),
    host lines for the pod's egress chain `egress_chain` (chain heads first), summary lines,
    selecting policy names).

    Egress is enforced on the HOST side of the pod's veth (as Calico, Cilium, kube-router and
    k3s's policy controller do): a DROP in the pod's own OUTPUT chain would make sendto() of a
    denied UDP datagram fail with EPERM at once, which no real CNI does (their drops are silent:
    UDP vanishes, TCP connect times out).
    """
    egress, ingress, summary = [], [], []
    sel_e, iso_e = _direction(pod, policies, pods, namespaces, "Egress", "egress", "to",
                              egress_chain, "-d", egress, summary)
    sel_i, iso_i = _direction(pod, policies, pods, namespaces, "Ingress", "ingress", "from",
                              "FK-INGRESS", "-s", ingress, summary)
    if not iso_e:
        summary.append("Egress: not isolated (all allowed)")
    if not iso_i:
        summary.append("Ingress: not isolated (all allowed)")
    iheads = [r for r in ingress if r.startswith(":")]
    ibody = [r for r in ingress if not r.startswith(":")]
    netns = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]",
             ":OUTPUT ACCEPT [0:0]", ":FK-INGRESS - [0:0]", ":FK-SVC-REJECT - [0:0]", *iheads,
             "-A OUTPUT -o lo -j ACCEPT",
             "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
             "-A OUTPUT -j FK-SVC-REJECT",
             "-A INPUT -i lo -j ACCEPT",
             "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
             "-A INPUT -j FK-INGRESS", *ibody]
    eheads = [r for r in egress if r.startswith(":")]
    ebody = [r for r in egress if not r.startswith(":")]
    host = [f":{egress_chain} - [0:0]", *eheads, *ebody]
    return netns, host, summary, sorted(set(sel_e) | set(sel_i))


def nat_rules(services, endpoints_of, gateway):
    """iptables-restore text (*nat) doing kube-proxy's ClusterIP DNAT, and the filter lines that
    REJECT Services without endpoints (as kube-proxy does). Returns (nat text, reject lines)."""
    lines = ["*nat", ":PREROUTING ACCEPT [0:0]", ":INPUT ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]",
             ":POSTROUTING ACCEPT [0:0]", ":FK-SERVICES - [0:0]",
             f"-A OUTPUT -d {SERVICE_CIDR} -j FK-SERVICES"]
    rejects = []
    for svc in services:
        ip = (svc.get("spec") or {}).get("clusterIP")
        if not ip or ip == "None":
            continue
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        for port in svc["spec"].get("ports") or []:
            proto = (port.get("protocol") or "TCP").lower()
            match = f"-d {ip}/32 -p {proto} -m {proto} --dport {port['port']}"
            if (ns, name) == ("default", "kubernetes"):
                eps = [f"{gateway}:6443"]
            elif (ns, name) == ("kube-system", "kube-dns"):
                eps = [f"{gateway}:53"]
            else:
                target = port.get("targetPort", port["port"])
                eps = [f"{ep_ip}:{tp}" for ep_ip, tp in endpoints_of(svc, target)]
            if not eps:
                rejects.append(f"-A FK-SVC-REJECT {match} -j REJECT --reject-with "
                               "icmp-port-unreachable")
                continue
            for i, ep in enumerate(eps):
                left = len(eps) - i
                stat = (f"-m statistic --mode random --probability {1.0 / left:.5f} "
                        if left > 1 else "")
                lines.append(f"-A FK-SERVICES {match} {stat}-j DNAT --to-destination {ep}")
    return "\n".join(lines), rejects


def in_cidr(ip, cidr):
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
