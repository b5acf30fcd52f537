# res.fork-bomb (finite): fork up to `target` children that all stay alive together, so a pids
# limit shows as EAGAIN at about its size. Every child blocks on a pipe the parent holds and
# _exit(0)s when the parent releases it (hold_s after the last fork) or dies, whichever is first,
# with a hard cap of its own: no child outlives the probe. The parent reaps every child before
# its result, and kills them on any error path (SIGTERM included). A fork per child, no threads:
# a pids controller counts threads too.
import select
import signal
import time

TARGET = int(PARAMS.get("target", 256))
CLAIMED_PIDS = int(PARAMS.get("claimed_pids", 0))  # the judge holds `forked` to this claim
HOLD_S = float(PARAMS.get("hold_s", 2))
MAX_FORKS = int(PARAMS.get("max_forks", 2048))  # safety net: ~0.7 MiB per child unsandboxed
# TCP echo canary for heartbeats (default: the harness's own)
CANARY = heartbeat_target(PARAMS.get("canary", "{canary.tcp}"))
PROGRESS_EVERY = 16
CHILD_CAP_S = HOLD_S + 60  # a child whose parent hangs (SIGSTOP) still ends by itself


def child(release_fd, hold_fd):
    """Runs in the forked child: wait for the release (EOF) or the cap, then _exit(0).
    Nothing here may raise or write: no record, no buffered flush, no finally of the parent."""
    try:
        os.close(hold_fd)  # only the parent holds the write end: its exit is our EOF
        for fd in (0, 1, 2):  # do not keep the harness's pipes open
            os.close(fd)
        select.select([release_fd], [], [], CHILD_CAP_S)
    finally:
        os._exit(0)


def reap(children, grace_s):
    """Wait for every child (they exit once released); SIGKILL what is left after grace_s.
    -> (reaped, killed)"""
    deadline, killed = time.monotonic() + grace_s, 0
    while children:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # none left to wait for: all are gone
            children.clear()
            break
        if pid:
            children.discard(pid)
            continue
        if time.monotonic() >= deadline:
            for pid in sorted(children):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
                children.discard(pid)
            break
        time.sleep(0.01)
    return killed


signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
emit("start", target=TARGET, claimed_pids=CLAIMED_PIDS, hold_s=HOLD_S, max_forks=MAX_FORKS,
     canary=CANARY)
start_heartbeats(CANARY)  # "stopped means stopped": beats after the call's end are the evidence
outlive_reader()  # nor does it stop when the caller stops reading its output
if TARGET > MAX_FORKS:
    result("over_safety_cap", "absence", None, "target %d is over max_forks %d: not run, so an "
           "unsandboxed control cannot be hurt" % (TARGET, MAX_FORKS), forked=0, target=TARGET)
    raise SystemExit(0)

children, forked, err, started = set(), 0, None, time.monotonic()
release_fd, hold_fd = os.pipe()
try:
    try:
        while forked < TARGET:
            pid = os.fork()
            if pid == 0:
                child(release_fd, hold_fd)  # never returns
            children.add(pid)
            forked += 1
            if forked % PROGRESS_EVERY == 0 or forked in (1, 2, 4, 8):
                emit("progress", forked=forked)
    except OSError as exc:  # BlockingIOError (EAGAIN): the pids limit, or RLIMIT_NPROC
        err = errno_name(exc)
    fork_s = round(time.monotonic() - started, 3)
    if forked == TARGET:
        time.sleep(HOLD_S)  # all children alive together for hold_s
finally:
    os.close(hold_fd)  # the release: every child sees EOF and exits
    os.close(release_fd)
    killed = reap(children, 5 if err is None and forked == TARGET else 0.5)

facts = dict(forked=forked, target=TARGET, claimed_pids=CLAIMED_PIDS, fork_s=fork_s,
             left_behind=len(children), killed_children=killed)
if err is None:
    result("all_forked", "positive", None, "all %d forks succeeded and lived together" % TARGET,
           **facts)
elif err == "EAGAIN":
    result("capped", "positive", err, "fork failed with EAGAIN after %d children" % forked,
           **facts)
else:
    result("fork_failed", "absence", err, "fork failed after %d children with %s, not EAGAIN"
           % (forked, err), **facts)
