# net.metadata: can the script talk HTTP to the cloud metadata endpoint? Any HTTP status at all
# means reached: a 403 or 404 from 169.254.169.254 still proves the packets got there and back.

TARGET = PARAMS.get("target", "169.254.169.254:80")
PATH = PARAMS.get("path", "/latest/meta-data/")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


host, port = split_hostport(TARGET, 80)
emit("start", target=TARGET, path=PATH)
outcome, evidence, err, detail, facts = http_get(host, port, PATH, TIMEOUT_S)
result(outcome, evidence, err, detail, target=TARGET, **facts)
