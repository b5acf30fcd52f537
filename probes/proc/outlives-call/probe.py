# proc.outlives-call: does a process started by the call outlive it? A REPL service or an agent's
# subprocess tool that only waits for its child leaves a setsid + double-forked grandchild running
# (docs/traps.md, trap 16: it also escapes a process-group kill). The probe cannot observe after its
# own end, so it only detaches the process and says so; the driver's `survivors` fact (or a
# heartbeat logged by the canary) decides the row.

import time

HOLD_S = min(max(float(PARAMS.get("hold_s", 5)), 0.5), 30.0)
CANARY = heartbeat_target(PARAMS.get("canary", "{canary.tcp}"))


def gone(pid):
    """True when pid has exited (missing from /proc, or a zombie)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:][:1] in (b"Z", b"X")


def detached_life(probe_pid, write_fd):
    """The grandchild: silent (stdio on /dev/null so no pipe of the caller stays open), lives on
    for HOLD_S seconds once the probe is gone, heartbeating to the canary if one was given."""
    os.write(write_fd, str(os.getpid()).encode())
    os.close(write_fd)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    start = time.monotonic()
    while not gone(probe_pid) and time.monotonic() - start < HOLD_S:
        time.sleep(0.05)
    end = time.monotonic() + HOLD_S
    target = split_hostport(CANARY, 0) if CANARY else None
    while time.monotonic() < end:
        if target is not None:
            tcp_beat(*target)
        time.sleep(0.5)


emit("start", hold_s=HOLD_S, canary=CANARY)
probe_pid = os.getpid()
read_fd, write_fd = os.pipe()
try:
    child = os.fork()
except OSError as exc:
    result("fork_failed", "positive", errno_name(exc), "the first fork was refused")
    sys.exit(0)
if child == 0:
    try:
        os.close(read_fd)
        os.setsid()
        if os.fork() == 0:
            detached_life(probe_pid, write_fd)
        os._exit(0)
    except BaseException:
        os._exit(1)
os.close(write_fd)
_, status = os.waitpid(child, 0)
reader = os.fdopen(read_fd, "rb")
grandchild = reader.read(32).decode(errors="replace").strip()
reader.close()
if not grandchild.isdigit():
    result("fork_failed", "positive", None,
           "the second fork did not happen (intermediate child exit status %d)" % status)
    sys.exit(0)
alive = not gone(int(grandchild))
result("detached", "absence", None,
       "process %s detached (setsid + double fork), alive at return: %s; whether it outlived "
       "the call is the driver's fact" % (grandchild, alive), detached_pid=int(grandchild),
       alive_at_return=alive)
