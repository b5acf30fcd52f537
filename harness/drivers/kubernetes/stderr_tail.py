# stderr_tail.py: the probe container's pid 1 in a kubernetes Job (drivers/kubernetes/objects.cc, Enforce):
#   python3 -I -S -c <this> TERMINATION_LOG SETTLE_S COMMAND...
# pods/log carries stdout and stderr as one stream (docs/traps.md, trap 44), so the probe's stderr
# must not reach it: this sleeps SETTLE_S (podSettle), runs COMMAND with stdout as it is (pods/log)
# and stderr on a pipe, keeps the last 4 KiB of that pipe (what the kubelet would keep of a bigger
# file anyway; a file written as it comes would grow without bound on the node's disk, outside
# the pod's ephemeral-storage accounting) and writes them to TERMINATION_LOG when COMMAND ends,
# for the kubelet's state.terminated.message. Never creates TERMINATION_LOG: without it, the tail
# is dropped.
# COMMAND's process is a child of this one, so its ancestors run up to pid 1 through here (a
# probe that tells its own tree from foreign processes still sees only its own). SIGTERM, SIGINT
# and SIGHUP are passed on to it. This ends when COMMAND does, as COMMAND as pid 1 would have
# (every process left in the container dies with pid 1), and exits with its status: the code,
# or 128 + the signal that ended it. It never writes to stdout or stderr itself.
import os
import select
import signal
import sys
import time

TAIL_BYTES = 4096
path, settle_s, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
if settle_s > 0:
    time.sleep(settle_s)
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.close(r)
    os.dup2(w, 2)
    os.close(w)
    os.execvp(argv[0], argv)  # a failure's traceback goes to the pipe: the kept tail says why
os.close(w)
for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(signum, lambda n, _frame: os.kill(child, n))
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 1)
os.dup2(null, 2)
tail, status, open_pipe = b"", None, True
while status is None:
    if open_pipe and select.select([r], [], [], 0.1)[0]:
        chunk = os.read(r, 65536)
        open_pipe = bool(chunk)
        tail = (tail + chunk)[-TAIL_BYTES:]
    elif not open_pipe:
        time.sleep(0.05)
    pid, st = os.waitpid(child, os.WNOHANG)
    if pid:
        status = st
# What COMMAND wrote before it ended (a process it left may hold the pipe: take only what is
# there now, at most 1 MiB more).
os.set_blocking(r, False)
for _ in range(16):
    try:
        chunk = os.read(r, 65536)
    except BlockingIOError:
        break
    if not chunk:
        break
    tail = (tail + chunk)[-TAIL_BYTES:]
try:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, tail)
    os.close(fd)
except OSError:
    pass
os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
