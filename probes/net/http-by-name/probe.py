# net.http-by-name: can the script resolve a name and get an HTTP(S) answer from it? Tries every
# address the name resolves to (localhost is often ::1 first) and keeps the most exposed result.
import urllib.parse

URL = PARAMS.get("url", "http://localhost:{canary.http_port}/")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))
# Most exposed first: one reached address is enough for a leak.
RANK = ["reached", "refused", "no_reply", "error", "blocked"]


url = urllib.parse.urlsplit(URL)
tls = url.scheme == "https"
host, port = url.hostname or "", url.port or (443 if tls else 80)
path = (url.path or "/") + ("?" + url.query if url.query else "")
emit("start", url=URL, host=host)
addrs, exc = resolve(host, port, TIMEOUT_S)
if not addrs:
    result("blocked", "absence", errno_name(exc), "name did not resolve", url=URL, addresses=[])
else:
    attempts, best = [], None
    for addr in addrs[:8]:  # bounded: each address may cost a full timeout
        got = http_get(host, port, path, TIMEOUT_S, tls=tls, addr=addr)
        attempts.append({"addr": addr, "outcome": got[0], "evidence": got[1], "errno": got[2]})
        if best is None or RANK.index(got[0]) < RANK.index(best[0]):
            best = got
        if got[0] == "reached":
            break
    outcome, evidence, err, detail, facts = best
    if outcome == "blocked" and any(a["evidence"] == "absence" for a in attempts):
        evidence = "absence"  # one address that only timed out weakens the proof for the name
    result(outcome, evidence, err, detail, url=URL, addresses=addrs, attempts=attempts, **facts)
