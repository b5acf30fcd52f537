# net.tcp-by-ip: raw TCP to an IP:port without any name lookup. Reached only when application
# bytes carrying the nonce come back (the TCP echo canary), because proxies and user-space network
# stacks accept a SYN locally: connect() succeeding alone proves nothing.

TARGET = PARAMS.get("target", "{canary.tcp}")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))

host, port = split_hostport(TARGET, 80)
emit("start", target=TARGET)
outcome, evidence, err, detail, facts = tcp_echo(host, port, TIMEOUT_S)
result(outcome, evidence, err, detail, target=TARGET, **facts)
