# res.cpu-loop: spin the CPU forever after a start record; the sandbox must end it (timeout, 124,
# 137, DeadlineExceeded). No result record on purpose: how it ended is the harness's observation.
# Given a TCP canary it also sends a tagged heartbeat every 0.5 s from a thread: a heartbeat
# logged after the sandbox said the call was over is a loop still running ("stopped means
# stopped"). It does NOT stop when its parent dies or its stdout reader goes away: real code
# ignores both, and a service that kills only the wrapper (and drops the pipes with its answer)
# must be caught. Bounds: its own max_s, and the harness's cleanup.
import time

HEARTBEAT_S = float(PARAMS.get("heartbeat_s", 1))
MAX_S = float(PARAMS.get("max_s", 600))
CANARY = heartbeat_target(PARAMS.get("canary", "{canary.tcp}"))

# The loop burns at the lowest priority: it still runs (and must still be ended) whatever the
# scheduler gives it, but it no longer takes the CPU its neighbours need to finish inside their
# own deadlines: at nice 0 two loops (an arm without a timeout and its control) fill both cores
# of a 2-core machine for 15 s beside the balloons (docs/traps.md, trap 41).
try:
    NICE = os.nice(19)
except OSError:  # a sandbox that forbids setpriority: the loop runs at its given priority
    NICE = None
emit("start", heartbeat_s=HEARTBEAT_S, max_s=MAX_S, canary=CANARY, nice=NICE)
start_heartbeats(CANARY)
outlive_reader()  # nor does it stop when the caller stops reading its output
began = time.monotonic()
next_beat = began + HEARTBEAT_S
spins = 0
while True:
    spins += 1
    if spins & 0xFFFF:  # read the clock only now and then: the loop should burn, not syscall
        continue
    now = time.monotonic()
    if now >= next_beat:
        emit("progress", elapsed_s=round(now - began, 1))
        next_beat = now + HEARTBEAT_S
        if now - began >= MAX_S:
            emit("progress", elapsed_s=round(now - began, 1), gave_up="max_s reached")
            os._exit(3)
