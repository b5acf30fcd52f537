# priv.no-new-privs: can a setuid binary raise this process's privileges? prctl answers under
# runc and gVisor alike; the /proc line is missing under gVisor (docs/traps.md, trap 10).
import ctypes

PR_GET_NO_NEW_PRIVS = 39
emit("start")
status_line = None
try:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("NoNewPrivs:"):
                status_line = line.split(":", 1)[1].strip()
except OSError:
    pass
try:
    libc = ctypes.CDLL(None, use_errno=True)
    value = libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
except (OSError, AttributeError) as exc:
    result("error", "absence", errno_name(exc), "prctl is not reachable")
    raise SystemExit(0)
facts = dict(prctl=value, proc_status=status_line)
if value == 1:
    result("set", "positive", None, "PR_GET_NO_NEW_PRIVS = 1", **facts)
elif value == 0:
    result("not_set", "positive", None, "PR_GET_NO_NEW_PRIVS = 0", **facts)
else:
    result("error", "absence", _errno.errorcode.get(ctypes.get_errno(), None),
           "prctl failed", **facts)
