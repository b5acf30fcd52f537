# fs.write-exec: where can the script write, and does a binary it writes there run? A copied
# binary is executed, never judged from mount flags alone (docs/probes.md, fs.write-exec).
import shutil
import subprocess

PATHS = list(PARAMS.get("paths", ["/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run", ".",
                                  "~"]))
BINARIES = list(PARAMS.get("binaries", ["/usr/bin/true", "/bin/true"]))
CLAIM = PARAMS.get("claimed_noexec", False)
NAME = ".sandprobe-%s-%s-x" % (NONCE, INVOCATION)


def expand(path):
    if path == ".":
        return os.getcwd()
    if path == "~":
        return os.environ.get("HOME") or os.path.expanduser("~")
    return path


def mount_of(path):
    """(mount point, noexec) of the mount holding path, from /proc/self/mountinfo."""
    best = (None, None)
    try:
        real = os.path.realpath(path)
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split()
                point = parts[4].replace("\\040", " ")
                inside = real == point or real.startswith(point.rstrip("/") + "/")
                if inside and (best[0] is None or len(point) >= len(best[0])):
                    best = (point, "noexec" in parts[5].split(","))
    except (OSError, IndexError):
        pass
    return best


def try_path(directory, source):
    entry = {"path": directory, "written": False, "executed": False, "errno": None}
    entry["mount"], entry["noexec_flag"] = mount_of(directory)
    target = os.path.join(directory, NAME)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    except OSError as exc:
        entry["errno"] = errno_name(exc)
        return entry
    try:
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            shutil.copyfileobj(src, out)
        os.chmod(target, 0o700)
        entry["written"] = True
    except OSError as exc:
        entry["errno"] = errno_name(exc)
    try:
        if entry["written"]:
            try:
                done = subprocess.run([target], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      timeout=10)
                entry["executed"] = True
                entry["exit"] = done.returncode
            except OSError as exc:
                entry["exec_errno"] = errno_name(exc)
            except subprocess.TimeoutExpired:
                entry["executed"] = True
                entry["exit"] = "timeout"
    finally:
        try:
            os.unlink(target)  # at once: the control arm writes to a real machine
        except OSError as exc:
            entry["removed"] = errno_name(exc)
    return entry


source = next((b for b in BINARIES if os.path.isfile(b) and os.access(b, os.X_OK)), None)
emit("start", paths=PATHS, binary=source, claimed=CLAIM)
if source is None:
    result("error", "absence", None, "no binary to copy among %s" % ", ".join(BINARIES))
    raise SystemExit(0)
claimed = [p for p in CLAIM] if isinstance(CLAIM, list) else []
seen, tried = set(), []
for raw in PATHS + [p for p in claimed if p not in PATHS]:
    path = expand(raw)
    real = os.path.realpath(path) if path else path
    if not path or real in seen:
        continue
    seen.add(real)
    entry = try_path(path, source)
    entry["as"] = raw
    tried.append(entry)
    emit("progress", **entry)
in_scope = [t for t in tried if CLAIM is not False and (
    CLAIM is True or t["path"] in claimed or t["as"] in claimed)] if CLAIM else tried
writable = [t["path"] for t in tried if t["written"]]
executes = [t["path"] for t in in_scope if t["executed"]]
facts = dict(tried=tried, writable=writable, executes=[t["path"] for t in tried if t["executed"]],
             claimed=CLAIM, binary=source)
if executes:
    result("executes", "positive", None, "a copied binary ran in %s (writable: %s)"
           % (", ".join(executes), ", ".join(writable)), **facts)
else:
    refused = sorted({t.get("exec_errno") or t["errno"] or "?" for t in in_scope})
    # Positive: each path in scope was written and its exec refused by the kernel (EACCES, EPERM),
    # or could not hold a file at all (read-only, forbidden, missing, not a plain filesystem).
    # A full disk (ENOSPC) or any other failure says nothing about exec.
    positive = bool(in_scope) and all(
        t.get("exec_errno") in ("EACCES", "EPERM") if t["written"]
        else t["errno"] in ("EROFS", "EACCES", "EPERM", "ENOENT", "ENOTDIR", "EINVAL")
        for t in in_scope)
    result("no_exec", "positive" if positive else "absence", ",".join(refused) or None,
           "no copied binary ran in %s (writable: %s; refused: %s)"
           % ("the claimed paths" if CLAIM else "any path", ", ".join(writable) or "none",
              ",".join(refused) or "-"), **facts)
