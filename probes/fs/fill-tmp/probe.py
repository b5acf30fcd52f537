# fs.fill-tmp: write a nonce-named file in chunks up to a finite target above the claimed /tmp
# size. The file is ALWAYS deleted, also on SIGTERM. Safety for an unsandboxed control arm: on a
# filesystem far larger than the target (so not the limit under test) stop before it is nearly full.
import signal
import time

DIR = PARAMS.get("dir", "/tmp")
TARGET_MIB = int(PARAMS.get("target_mib", 256))
CHUNK_MIB = max(1, int(PARAMS.get("chunk_mib", 4)))  # 0 would never end
RESERVE_MIB = int(PARAMS.get("reserve_mib", 1024))
CLAIMED_MIB = int(PARAMS.get("claimed_mib", 0))  # the judge holds written_mib to this claim
HOLD_S = float(PARAMS.get("hold_s", 0))  # keep the full file this long (a limit enforced later)
MIB, PROGRESS_EVERY = 1 << 20, 32 << 20
# Refusals that are the filesystem's limit or policy speaking; anything else is weaker evidence.
LIMIT_ERRNOS = {"ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EFBIG"}


def host_disk_nearly_full(fd):
    st = os.fstatvfs(fd)
    size_mib, free_mib = st.f_blocks * st.f_frsize // MIB, st.f_bavail * st.f_frsize // MIB
    return size_mib > 4 * TARGET_MIB and free_mib < RESERVE_MIB + CHUNK_MIB


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
target = TARGET_MIB * MIB
chunk = memoryview(b"\xa5" * (CHUNK_MIB * MIB))
emit("start", dir=DIR, target_mib=TARGET_MIB, chunk_mib=CHUNK_MIB, claimed_mib=CLAIMED_MIB)
written, err, guarded, fd = 0, None, False, None
try:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    while written < target:
        if host_disk_nearly_full(fd):
            guarded = True
            break
        before = written
        written += os.write(fd, chunk[:target - written])  # short writes just loop again
        if written // PROGRESS_EVERY > before // PROGRESS_EVERY:
            emit("progress", written_mib=written // MIB)
    closing, fd = fd, None
    os.close(closing)  # close can report a deferred ENOSPC/EDQUOT too
    if HOLD_S > 0 and not guarded:
        # Data kept, not written and deleted at once: a limit enforced after the fact (the
        # kubelet's eviction of an emptyDir over its sizeLimit) gets the time to act.
        emit("progress", written_mib=written // MIB, holding_s=HOLD_S)
        time.sleep(HOLD_S)
except OSError as exc:
    err = errno_name(exc)
finally:
    if fd is not None:
        os.close(fd)
    cleaned_up = remove(path)

facts = dict(dir=DIR, written_mib=round(written / MIB, 1), target_mib=TARGET_MIB,
             cleaned_up=cleaned_up)
if guarded:
    result("low_space_guard", "absence", None, "stopped: a large, nearly full filesystem is not "
           "the limit under test, and filling it could harm the host", **facts)
elif err:
    proof = "positive" if err in LIMIT_ERRNOS else "absence"
    result("write_failed", proof, err, "write refused before the target", **facts)
else:
    result("target_written", "positive", None, "wrote the whole target", **facts)
