# priv.setuid: does a setuid-root binary still make root here? Tried, not read from
# NoNewPrivs or mount flags: the helper blocks writing to a full pipe and the kernel's
# /proc/<pid>/status says what it runs as (docs/probes.md, priv.setuid).
import fcntl
import select
import stat
import time

HELPERS = [list(h) for h in PARAMS.get("helpers", [["/usr/bin/su", "--version"],
                                                   ["/bin/su", "--version"],
                                                   ["/usr/bin/mount", "--version"],
                                                   ["/usr/bin/umount", "--version"]])]
DROP = int(PARAMS.get("drop_to", 65534))


def setuid_root(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    # Any owner: in a user namespace a host root's file shows the overflow uid (65534), and the
    # kernel then ignores its setuid bit. That is the containment being tested, so it is tried.
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & stat.S_ISUID:
        return None
    nosuid = None
    try:
        nosuid = bool(os.statvfs(path).f_flag & os.ST_NOSUID)
    except (OSError, AttributeError):
        pass
    return dict(path=path, mode=oct(st.st_mode & 0o7777), owner_uid=st.st_uid,
                nosuid_mount=nosuid)


def status_of(pid):
    fields = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:
        return None
    return fields


def full_pipe():
    """A pipe whose write end is full: a helper writing to it blocks while we look at it."""
    rfd, wfd = os.pipe()
    fcntl.fcntl(wfd, fcntl.F_SETFL, fcntl.fcntl(wfd, fcntl.F_GETFL) | os.O_NONBLOCK)
    try:
        while True:
            os.write(wfd, b"\0" * 65536)
    except BlockingIOError:
        pass
    fcntl.fcntl(wfd, fcntl.F_SETFL, fcntl.fcntl(wfd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return rfd, wfd


def run_helper(argv):
    """Runs argv unprivileged with its output blocked; returns what the kernel said it ran as."""
    out_r, out_w = full_pipe()
    err_r, err_w = os.pipe()  # the child's exec or drop failure, close-on-exec
    os.set_inheritable(err_w, False)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(out_r)
            os.close(err_r)
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            if os.geteuid() == 0:
                try:
                    os.setgroups([])
                except OSError:
                    pass  # a user namespace may deny setgroups; a non-root uid still is the test
                try:
                    os.setgid(DROP)
                    os.setuid(DROP)
                except OSError as exc:
                    os.write(err_w, ("drop:%s" % errno_name(exc)).encode())
                    os._exit(0)
            os.execv(argv[0], argv)
        except BaseException as exc:
            try:
                os.write(err_w, ("exec:%s" % errno_name(exc)).encode())
            finally:
                os._exit(0)
        os._exit(0)
    os.close(out_w)
    os.close(err_w)
    seen = None
    comm = os.path.basename(argv[0])[:15]
    deadline = time.monotonic() + 5
    failure = b""
    watch = [err_r]  # EOF on it: the exec happened (close-on-exec)
    while time.monotonic() < deadline:
        # Unhurried: under gVisor every busy task costs the sentry threads, and a pids limit
        # counts them (docs/traps.md, trap 19).
        ready, _, _ = select.select(watch, [], [], 0.05)
        if ready:
            failure = os.read(err_r, 200)
            if failure:
                break
            watch = []
            time.sleep(0.05)
        st = status_of(pid)
        if st is None or st.get("State", "").startswith(("Z", "X")):
            break
        # Blocked in its write to the full pipe, after the exec: the credentials are final.
        if st.get("Name") == comm and st.get("State", "").startswith("S"):
            seen = st
            break
    # Drain the pipe so the helper can finish, then reap it.
    fcntl.fcntl(out_r, fcntl.F_SETFL, fcntl.fcntl(out_r, fcntl.F_GETFL) | os.O_NONBLOCK)
    end = time.monotonic() + 5
    while time.monotonic() < end:
        try:
            if not os.read(out_r, 65536):
                break
        except BlockingIOError:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                pid = 0
                break
            time.sleep(0.01)
    if pid:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    if not failure:
        failure = os.read(err_r, 200)
    os.close(out_r)
    os.close(err_r)
    return seen, failure.decode(errors="replace")


emit("start", uid=os.getuid(), euid=os.geteuid())
looked = [h[0] for h in HELPERS if h]
found = [(h, info) for h in HELPERS if h for info in [setuid_root(h[0])] if info]
facts = dict(looked=looked, found=[info for _, info in found], caller_euid=os.geteuid(),
             dropped_to=DROP if os.geteuid() == 0 else None)
if not found:
    result("no_setuid_binary", "absence", None,
           "no setuid binary at %s: nothing to try" % ", ".join(looked), **facts)
    raise SystemExit(0)
tried = []
for argv, info in found:
    try:
        seen, failure = run_helper(argv)
    except OSError as exc:
        result("error", "absence", errno_name(exc), "could not start %s" % argv[0], **facts)
        raise SystemExit(0)
    if failure.startswith("drop:"):
        result("cannot_drop_root", "absence", failure[5:], "runs as root and cannot drop to %d "
               "(%s): priv.uid judges root" % (DROP, failure[5:]), **facts)
        raise SystemExit(0)
    if seen is None:
        tried.append(dict(path=argv[0], failure=failure or "exited before it could be seen"))
        continue
    uids = seen.get("Uid", "").split()
    euid = int(uids[1]) if len(uids) > 1 else None
    facts.update(helper=argv[0], helper_uid=seen.get("Uid"), helper_no_new_privs=seen.get(
        "NoNewPrivs"), tried=tried)
    if euid == 0:
        result("became_root", "positive", None, "%s ran with euid 0 (Uid: %s)"
               % (argv[0], seen.get("Uid")), **facts)
    else:
        result("not_elevated", "positive", None, "%s ran with euid %s (Uid: %s): the setuid bit "
               "was ignored" % (argv[0], euid, seen.get("Uid")), **facts)
    raise SystemExit(0)
facts["tried"] = tried
result("error", "absence", None, "no helper could be seen running: %s"
       % "; ".join("%s %s" % (t["path"], t["failure"]) for t in tried), **facts)
