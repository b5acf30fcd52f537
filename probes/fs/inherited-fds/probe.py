# fs.inherited-fds: what did the sandbox hand the code besides stdin, stdout and stderr? A
# directory descriptor opened outside the sandbox's root walks out of it with openat(".."); a
# file descriptor reads what the mount namespace hides. Contents are hashed, never printed.
import fcntl
import stat

TOKEN_SHA256 = str(PARAMS.get("token_sha256", ""))
MAX_FD = int(PARAMS.get("max_fd", 1024))
READ_BYTES = int(PARAMS.get("read_bytes", 1048576))


def open_fds():
    """Descriptors above 2 open now: fstat of 3..MAX_FD (opens nothing), then /proc/self/fd for
    higher ones (its own descriptor is closed again before the check)."""
    fds = []
    for fd in range(3, MAX_FD + 1):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            pass
    try:
        higher = [int(n) for n in os.listdir("/proc/self/fd") if int(n) > MAX_FD]
    except OSError:
        higher = []
    for fd in higher:
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            pass
    return fds


def content(read):
    """Facts about bytes read: length, hash prefix, whether they are the planted token."""
    return dict(read_bytes=len(read), sha256_prefix=sha256_prefix(read),
                planted_token=bool(TOKEN_SHA256) and hashlib.sha256(read).hexdigest() == TOKEN_SHA256)


def read_fd(fd):
    try:
        return content(os.pread(fd, READ_BYTES, 0)), None
    except OSError as exc:
        return None, errno_name(exc)


def escapes_root(fd):
    """Walk ".." from the directory up to a root (its own parent); True when that root is not
    the sandbox's "/". None when the walk could not finish."""
    own = os.stat("/")
    current = os.dup(fd)
    try:
        for _ in range(256):
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)
            a, b = os.fstat(current), os.fstat(parent)
            os.close(current)
            current = parent
            if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
                return (b.st_dev, b.st_ino) != (own.st_dev, own.st_ino)
        return None
    except OSError:
        return None
    finally:
        os.close(current)


def directory(fd, entry):
    entry["outside_root"] = escapes_root(fd)
    try:
        names = os.listdir(fd)
    except OSError as exc:
        entry["list_errno"] = errno_name(exc)
        return
    entry["entries"] = len(names)
    for name in sorted(names)[:64]:
        try:
            child = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            continue
        try:
            if stat.S_ISREG(os.fstat(child).st_mode):
                facts, _ = read_fd(child)
                if facts and facts["planted_token"]:
                    entry["planted_token_inside"] = True
                    break
        finally:
            os.close(child)


def describe(fd):
    st = os.fstat(fd)
    entry = dict(fd=fd)
    try:
        entry["target"] = os.readlink("/proc/self/fd/%d" % fd)[:200]
    except OSError:
        pass
    try:
        mode = {os.O_RDONLY: "r", os.O_WRONLY: "w", os.O_RDWR: "rw"}.get(
            fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE)
        entry["access"] = mode
    except OSError:
        pass
    if stat.S_ISREG(st.st_mode):
        entry["kind"] = "file"
        entry["read"], entry["read_errno"] = read_fd(fd)
    elif stat.S_ISDIR(st.st_mode):
        entry["kind"] = "directory"
        directory(fd, entry)
    elif stat.S_ISSOCK(st.st_mode):
        entry["kind"] = "socket"
        try:
            s = socket.socket(fileno=os.dup(fd))
            entry["family"], entry["type"] = s.family.name, s.type.name
            s.close()
        except (OSError, ValueError):
            pass
    elif stat.S_ISFIFO(st.st_mode):
        entry["kind"] = "pipe"
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        entry["kind"] = "device"
    else:
        entry["kind"] = "other"
    return entry


def summary(e):
    what = e["kind"]
    if e.get("outside_root"):
        what += " outside the sandbox's root"
    if e.get("read"):
        what += ", read %d bytes" % e["read"]["read_bytes"]
    if (e.get("read") or {}).get("planted_token") or e.get("planted_token_inside"):
        what += " (the planted token)"
    return "fd %d: %s" % (e["fd"], what)


inherited = open_fds()  # before the probe opens anything of its own
emit("start", inherited=inherited[:64])
entries = []
for fd in inherited[:64]:
    try:
        entries.append(describe(fd))
    except OSError as exc:
        entries.append(dict(fd=fd, kind="gone", errno=errno_name(exc)))
if entries:
    result("inherited", "positive", None, "; ".join(summary(e) for e in entries[:8]),
           descriptors=entries, count=len(inherited))
else:
    result("none", "positive", None, "only 0-2 are open", descriptors=[], count=0)
