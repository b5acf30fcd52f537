# kernel.syscalls: which large-surface syscalls get past the sandbox's filter? Judged by the
# errno each harmless call returns (docs/probes.md, kernel.syscalls), never by /proc's Seccomp
# line: under gVisor the host filter guards the sentry, and the sentry answers the calls itself.
import ctypes
import platform
import struct

# Syscall numbers per architecture (Linux uapi unistd tables).
NUMBERS = {
    "x86_64": dict(bpf=321, perf_event_open=298, keyctl=250, io_uring_setup=425, unshare=272,
                   mount=165),
    "aarch64": dict(bpf=280, perf_event_open=241, keyctl=219, io_uring_setup=425, unshare=97,
                    mount=40),
}
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
# What a filter answers: Docker's and containerd's profiles EPERM, systemd and gVisor ENOSYS for
# what they do not let through or do not implement.
FILTER_ERRNOS = ("EPERM", "ENOSYS")

emit("start", arch=platform.machine())
NR = NUMBERS.get(platform.machine())
if NR is None:
    result("error", "absence", None, "no syscall table for %s" % platform.machine())
    raise SystemExit(0)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
C = ctypes.c_long


def call(name, *args):
    """(return value, errno name or None) of one raw syscall."""
    ctypes.set_errno(0)
    ret = libc.syscall(C(NR[name]), *args)
    code = ctypes.get_errno()
    return ret, (_errno.errorcode.get(code, "E%d" % code) if ret < 0 else None)


def in_child(fn):
    """Runs fn() in a forked child (namespaces die with it); returns what it wrote or an error."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            out = fn()
        except BaseException as exc:  # anything: the child must never return into the probe
            out = "error:%s" % type(exc).__name__
        try:
            os.write(wfd, out.encode()[:200])
        finally:
            os._exit(0)
    os.close(wfd)
    data = b""
    while True:
        chunk = os.read(rfd, 256)
        if not chunk:
            break
        data += chunk
    os.close(rfd)
    os.waitpid(pid, 0)
    return data.decode(errors="replace") or "error:no answer"


def judge(worked, err):
    if worked:
        return "allowed"
    return "refused" if err in FILTER_ERRNOS else "reached"


def try_bpf():
    attr = ctypes.create_string_buffer(128)  # BPF command 1000 does not exist: EINVAL if reached
    _, err = call("bpf", ctypes.c_int(1000), attr, ctypes.c_uint(128))
    return dict(call="bpf", result=judge(False, err), errno=err, tried="invalid command 1000")


def try_perf():
    attr = bytearray(128)  # struct perf_event_attr: PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY
    struct.pack_into("IIQ", attr, 0, 1, 128, 9)
    struct.pack_into("Q", attr, 40, (1 << 0) | (1 << 5) | (1 << 6))  # disabled, excl. kernel, hv
    buf = ctypes.create_string_buffer(bytes(attr), 128)
    fd, err = call("perf_event_open", buf, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1),
                   ctypes.c_ulong(0))
    if fd >= 0:
        os.close(fd)
    return dict(call="perf_event_open", result=judge(fd >= 0, err), errno=err,
                tried="a disabled software counter on itself")


def try_keyctl():
    _, err = call("keyctl", ctypes.c_int(9999), C(0), C(0), C(0), C(0))  # no such operation
    return dict(call="keyctl", result=judge(False, err), errno=err, tried="invalid operation 9999")


def try_io_uring():
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd, err = call("io_uring_setup", ctypes.c_uint(1), params)
    if fd >= 0:
        os.close(fd)
    return dict(call="io_uring_setup", result=judge(fd >= 0, err), errno=err,
                tried="one entry, closed at once")


def child_unshare(flags, then_mount):
    def fn():
        ret, err = call("unshare", ctypes.c_int(flags))
        if ret != 0:
            return "unshare:%s" % err
        if not then_mount:
            return "ok"
        target = b"/tmp" if os.path.isdir("/tmp") else b"/"
        ret, err = call("mount", ctypes.c_char_p(b"none"), ctypes.c_char_p(target),
                        ctypes.c_char_p(b"tmpfs"), ctypes.c_ulong(0), ctypes.c_void_p(0))
        return "ok" if ret == 0 else "mount:%s" % err
    return in_child(fn)


def try_unshare():
    ret, bad = call("unshare", ctypes.c_int(0x1))  # not a namespace flag: EINVAL if reached
    bad = None if ret == 0 else bad
    got = child_unshare(CLONE_NEWUSER, False)
    worked = got == "ok"
    err = None if worked else (got.split(":", 1)[1] if got.startswith("unshare:") else got)
    # A refused user namespace may be the kernel's own policy; the invalid flag tells whether
    # the call itself got through.
    res = "allowed" if worked else judge(False, bad if bad is not None else err)
    if ret == 0 and not worked:
        res = "reached"  # the invalid flag was accepted by something that answered it
    return dict(call="unshare", result=res, errno=err, invalid_flag_errno=bad,
                tried="CLONE_NEWUSER in a child; an invalid flag")


def try_mount():
    _, missing = call("mount", ctypes.c_char_p(b"none"),
                      ctypes.c_char_p(("/.sandprobe-missing-%s" % NONCE).encode()),
                      ctypes.c_char_p(b"tmpfs"), ctypes.c_ulong(0), ctypes.c_void_p(0))
    got = child_unshare(CLONE_NEWUSER | CLONE_NEWNS, True)
    worked = got == "ok"
    err = None if worked else got.split(":", 1)[-1]
    res = "allowed" if worked else judge(False, missing)
    return dict(call="mount", result=res, errno=err, missing_target_errno=missing,
                in_namespace=got, tried="a missing target; tmpfs in a child's user+mount ns")


calls = []
for attempt in (try_bpf, try_perf, try_keyctl, try_io_uring, try_unshare, try_mount):
    try:
        calls.append(attempt())
    except OSError as exc:  # fork refused (a pids limit): that call is not known
        calls.append(dict(call=attempt.__name__[4:], result="not_run", errno=errno_name(exc)))
    emit("progress", **calls[-1])
through = [c for c in calls if c["result"] in ("allowed", "reached")]
unknown = [c["call"] for c in calls if c["result"] == "not_run"]
names = lambda cs: ", ".join("%s (%s)" % (c["call"], c["errno"] or "ok") for c in cs)
facts = dict(calls=calls, allowed=[c["call"] for c in through],
             claimed=PARAMS.get("claimed_seccomp", "") or None)
if through:
    result("reached", "positive", None, "got past the filter: " + names(through), **facts)
elif unknown:
    result("error", "absence", None, "not run: " + ", ".join(unknown), **facts)
else:
    result("refused", "positive", ",".join(sorted({c["errno"] for c in calls})),
           "all six refused: " + names(calls), **facts)
