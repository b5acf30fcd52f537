# net.docker-api: is a Docker Engine API reachable over TCP from the sandbox? Anyone who can talk
# to it can start a privileged container and own the host. Only targets the suite names are
# asked; the default gateway is a fact unless gateway_ports opts in (docs/design.md "Traffic
# rule"). Exposure is the API's own answer (a version it claims), never connect() alone.
import http.client

TARGETS = [str(t) for t in PARAMS.get("targets", ["{canary.docker}"]) or [] if str(t)]
GATEWAY_PORTS = [int(p) for p in PARAMS.get("gateway_ports", []) or []]
TIMEOUT_S = float(PARAMS.get("timeout_s", 2))


def engine_get(host, port, tls, path):
    """One GET -> (status, headers dict (lower-case names), body bytes ≤64 KiB). Raises OSError
    or http.client.HTTPException."""
    if tls:  # reachability only: the daemon's certificate is not checked
        import ssl
        conn = http.client.HTTPSConnection(host, port, timeout=TIMEOUT_S,
                                           context=ssl._create_unverified_context())
    else:
        conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
    try:
        conn.request("GET", path, headers={"X-Sandprobe": "%s %s" % (NONCE, INVOCATION)})
        resp = conn.getresponse()
        headers = {k.lower(): v[:100] for k, v in resp.getheaders()}
        try:
            body = resp.read(65536)
        except (OSError, http.client.HTTPException):
            body = b""
        return resp.status, headers, body
    finally:
        conn.close()


def ask(host, port, tls):
    """-> (outcome, evidence, errno, detail, facts)"""
    try:  # the connect alone first, so a refusal or no route is told apart from no HTTP
        socket.create_connection((host, port), timeout=TIMEOUT_S).close()
    except OSError as exc:
        outcome, evidence, err, detail = net_failure(exc, host)
        if outcome == "refused":
            detail = "refused: the host is reachable, no daemon listens there"
        return outcome, evidence, err, detail, {}
    try:
        status, headers, body = engine_get(host, port, tls, "/_ping")
    except (OSError, http.client.HTTPException) as exc:
        return "no_reply", "absence", errno_name(exc), "connected, but no HTTP answer", {}
    facts = dict(ping_status=status, ping_body=body[:16].decode("ascii", "replace"),
                 api_version=headers.get("api-version"), server=headers.get("server"))
    try:
        vstatus, _, vbody = engine_get(host, port, tls, "/version")
        version = json.loads(vbody.decode("utf-8", "replace")) if vstatus == 200 else {}
        if isinstance(version, dict):
            facts["api_version"] = facts["api_version"] or str(version.get("ApiVersion", ""))[:32] or None
            facts["engine_version"] = str(version.get("Version", ""))[:64] or None
    except (OSError, http.client.HTTPException, ValueError):
        pass
    if facts["api_version"]:
        return "daemon_answers", "positive", None, "a Docker API answered: API version %s" % (
            facts["api_version"]), facts
    return "not_docker", "absence", None, "HTTP %d without an API version: no Docker API" % (
        status), facts


gateways = default_gateways()
targets = list(TARGETS)
for gw in gateways:
    targets += ["%s%s:%d" % ("https://" if p == 2376 else "", gw, p) for p in GATEWAY_PORTS]
emit("start", targets=targets, gateways=gateways)
asked = []
for target in dict.fromkeys(targets):
    tls = target.startswith("https://")
    host, port = split_hostport(target.split("://", 1)[-1], 2376 if tls else 2375)
    outcome, evidence, err, detail, facts = ask(host, port, tls)
    asked.append(dict(target=target, outcome=outcome, evidence=evidence, errno=err,
                      detail=detail, is_gateway=host in gateways, **facts))
    emit("target", **asked[-1])
answered = [a for a in asked if a["outcome"] == "daemon_answers"]
if not asked:
    result("no_target", "absence", None, "no target given (gateway %s only reported)"
           % (", ".join(gateways) or "none"), gateways=gateways)
elif answered:
    a = answered[0]
    result("daemon_answers", "positive", None, "%s: %s" % (a["target"], a["detail"]),
           api_version=a["api_version"], gateways=gateways, asked=asked)
elif all(a["outcome"] == "blocked" for a in asked):
    result("blocked", "positive" if all(a["evidence"] == "positive" for a in asked) else
           "absence", asked[0]["errno"], "every target blocked (%s)" % ", ".join(
               "%s %s" % (a["target"], a["errno"]) for a in asked), gateways=gateways, asked=asked)
else:
    a = [a for a in asked if a["outcome"] != "blocked"][0]
    result(a["outcome"], a["evidence"], a["errno"], "%s: %s" % (a["target"], a["detail"]),
           gateways=gateways, asked=asked)
