# res.cpu-loop: spin the CPU forever after a start record; the sandbox must end it (timeout, 124,
# 137, DeadlineExceeded). No result record on purpose: how it ended is the harness's observation.
# Safety for an unsandboxed control arm: stop quietly when the parent goes away (an orphaned
# spinner must not outlive a crashed harness) and after max_s in any case.
import time

HEARTBEAT_S = float(PARAMS.get("heartbeat_s", 1))
MAX_S = float(PARAMS.get("max_s", 600))

parent = os.getppid()
emit("start", heartbeat_s=HEARTBEAT_S, max_s=MAX_S)
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
        if os.getppid() != parent:
            os._exit(3)
        if now - began >= MAX_S:
            emit("progress", elapsed_s=round(now - began, 1), gave_up="max_s reached")
            os._exit(3)
