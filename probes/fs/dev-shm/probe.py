# fs.dev-shm: write a nonce-named file in /dev/shm in steps up to a finite target (default twice
# Docker's 64 MiB shm). /dev/shm is a tmpfs of its own in Docker, so a size limit there shows as
# ENOSPC; its pages are also charged to the memory cgroup (docs/traps.md, trap 4), so a memory limit
# may kill the probe first. The file is ALWAYS deleted, also on SIGTERM; it is named like
# fs.fill-tmp's (.sandprobe-fill-<nonce>-<invocation>) so `sandprobe cleanup` finds leftovers.
# Safety for an unsandboxed control arm: never more than the target, and on a tmpfs far larger
# than the target (the host's RAM-backed /dev/shm) stop before it is nearly full.
import signal

DIR = PARAMS.get("dir", "/dev/shm")
TARGET_MIB = int(PARAMS.get("target_mib", 128))
STEP_MIB = max(1, int(PARAMS.get("step_mib", 8)))  # 0 would never end
RESERVE_MIB = int(PARAMS.get("reserve_mib", 512))
MIB = 1 << 20
FULL_ERRNOS = {"ENOSPC", "EDQUOT", "EFBIG"}  # the tmpfs (or a quota) is full: a size limit
# /dev/shm missing or not writable at all: contained, but no size limit was measured.
REFUSED_ERRNOS = {"ENOENT", "ENOTDIR", "EROFS", "EACCES", "EPERM"}


def space_mib(fd_or_path):
    """(size, free) of the filesystem in MiB, from statvfs (free as an unprivileged user sees)."""
    st = os.fstatvfs(fd_or_path) if isinstance(fd_or_path, int) else os.statvfs(fd_or_path)
    return st.f_blocks * st.f_frsize // MIB, st.f_bavail * st.f_frsize // MIB


def nearly_full(size_mib, free_mib):
    # A filesystem over 4x the target is not the limit under test; filling it would only take
    # the host's memory (tmpfs) or disk. A small one (a sandbox's shm) may be filled to ENOSPC.
    return size_mib > 4 * TARGET_MIB and free_mib < RESERVE_MIB + STEP_MIB


def remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


# A SIGTERM from a sandbox timeout must still run the finally below (exit status stays 143).
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
path = os.path.join(DIR, ".sandprobe-fill-%s-%s" % (NONCE, INVOCATION))
try:
    size_mib, free_mib = space_mib(DIR)
except OSError as exc:
    size_mib, free_mib, statvfs_errno = None, None, errno_name(exc)
else:
    statvfs_errno = None
emit("start", dir=DIR, target_mib=TARGET_MIB, step_mib=STEP_MIB, size_mib=size_mib,
     free_mib=free_mib)
step = memoryview(b"\xa5" * (STEP_MIB * MIB))
target = TARGET_MIB * MIB
written, err, guarded, opened, fd = 0, None, False, False, None
try:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    opened = True
    while written < target:
        if nearly_full(*space_mib(fd)):
            guarded = True
            break
        goal = min(target, written + len(step))
        while written < goal:  # short writes just loop again
            written += os.write(fd, step[:goal - written])
        emit("progress", written_mib=round(written / MIB, 1))
    closing, fd = fd, None
    os.close(closing)  # close can report a deferred ENOSPC/EDQUOT too
except OSError as exc:
    err = errno_name(exc)
finally:
    if fd is not None:
        os.close(fd)
    cleaned_up = remove(path)

facts = dict(dir=DIR, written_mib=round(written / MIB, 1), target_mib=TARGET_MIB,
             size_mib=size_mib, free_mib=free_mib, statvfs_errno=statvfs_errno,
             cleaned_up=cleaned_up)
if guarded:
    result("low_space_guard", "absence", None, "stopped: a large, nearly full filesystem is not "
           "the limit under test, and filling it could harm the host", **facts)
elif err in FULL_ERRNOS:  # at open too: a full tmpfs may have no inode left
    result("shm_full", "positive", err, "%s after %s MiB of %d MiB: the shm size held"
           % (err, facts["written_mib"], TARGET_MIB), **facts)
elif err in REFUSED_ERRNOS and not opened:
    proof = "positive" if err == "EROFS" else "absence"
    what = {"ENOENT": "no %s" % DIR, "ENOTDIR": "%s is not a directory" % DIR,
            "EROFS": "%s is read-only (EROFS)" % DIR}.get(err, "%s is not writable (%s)" % (
                DIR, err))
    result("not_writable", proof, err, "%s: contained, but no shm size limit was measured "
           "(weaker than ENOSPC)" % what, **facts)
elif err:
    result("write_failed", "absence", err, "write failed after %s MiB with an unexpected errno"
           % facts["written_mib"], **facts)
else:
    result("target_written", "positive", None, "wrote the whole %d MiB target" % TARGET_MIB,
           **facts)
