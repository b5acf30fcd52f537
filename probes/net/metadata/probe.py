# net.metadata: can the script talk HTTP to the cloud metadata endpoint? Any HTTP status at all
# means reached: a 403 or 404 from 169.254.169.254 still proves the packets got there and back.

# No default target: a suite must name one (a canary in tests; 169.254.169.254:80 in production),
# so a suite that forgets it sends nothing anywhere instead of reaching for a real address.
TARGET = PARAMS.get("target", "{canary.http}")
PATH = PARAMS.get("path", "/latest/meta-data/")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


emit("start", target=TARGET, path=PATH)
if not TARGET:
    result("no_target", "absence", None, "no target given (set params.target)", target=None)
    raise SystemExit(0)
host, port = split_hostport(TARGET, 80)
outcome, evidence, err, detail, facts = http_get(host, port, PATH, TIMEOUT_S)
result(outcome, evidence, err, detail, target=TARGET, **facts)
