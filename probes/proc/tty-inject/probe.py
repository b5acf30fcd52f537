# proc.tty-inject: TIOCSTI pushes bytes into a terminal's input queue as if typed. A sandbox that
# keeps the controlling terminal of the shell that started it can type into that shell: the next
# command line it reads. The probe pushes a tagged word without a newline (nothing runs) into
# every terminal it holds; the harness, which owns the terminal, decides the row from what is
# pending on it after the call (driver fact tty_injected), so the probe's own word never counts.
import fcntl, stat, termios

TEXT = str(PARAMS.get("text", "SANDPROBE-TTY"))
TAG = ("%s %s %s" % (TEXT, NONCE, INVOCATION)).encode()
TIOCLINUX = 0x541C
TIOCL_GETSHIFTSTATE = 6
TIOCGSID = 0x5429  # answers only on the caller's controlling terminal (ENOTTY otherwise)


def sysctl(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as exc:
        return errno_name(exc)


def terminals():
    """(name, fd) for each distinct terminal held: fds 0-2 that are ttys, then /dev/tty (the
    controlling terminal; ENXIO without one)."""
    found, seen, notes, controlling = [], set(), {}, False
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                rdev = os.fstat(fd).st_rdev
                if rdev not in seen:
                    seen.add(rdev)
                    found.append(("fd%d" % fd, fd))
                    controlling = controlling or is_controlling(fd)
            else:
                notes["fd%d" % fd] = stat.filemode(os.fstat(fd).st_mode)[0]  # p, -, c, s
        except OSError as exc:
            notes["fd%d" % fd] = errno_name(exc)
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
        if controlling:  # /dev/tty is that same terminal: push once
            os.close(fd)
            notes["/dev/tty"] = "the controlling terminal, held as a standard fd"
        else:
            found.append(("/dev/tty", fd))
    except OSError as exc:
        notes["/dev/tty"] = errno_name(exc)
    return found, notes


def is_controlling(fd):
    try:
        fcntl.ioctl(fd, TIOCGSID, b"\0\0\0\0")
        return True
    except OSError:
        return False


def push(fd):
    """TIOCSTI the tag byte by byte -> (bytes pushed, errno name of the first refusal or None)."""
    for i in range(len(TAG)):
        try:
            fcntl.ioctl(fd, termios.TIOCSTI, TAG[i:i + 1])
        except OSError as exc:
            return i, errno_name(exc)
    return len(TAG), None


def tioclinux(fd):
    try:
        fcntl.ioctl(fd, TIOCLINUX, bytes([TIOCL_GETSHIFTSTATE]))
        return "answered"
    except OSError as exc:
        return errno_name(exc)


legacy = sysctl("/proc/sys/dev/tty/legacy_tiocsti")
found, notes = terminals()
emit("start", terminals=[n for n, _ in found], not_terminals=notes, legacy_tiocsti=legacy)
tries = []
for name, fd in found:
    pushed, err = push(fd)
    tries.append(dict(terminal=name, controlling=is_controlling(fd), pushed_bytes=pushed,
                      errno=err, tioclinux=tioclinux(fd)))
facts = dict(terminals=tries, not_terminals=notes, legacy_tiocsti=legacy, tag_bytes=len(TAG))
if not found:
    result("no_tty", "absence", None, "no terminal here (stdin %s, /dev/tty %s): a sandbox started "
           "with a pipe or /dev/null as stdin shows nothing; run the arm with tty: true" % (
               notes.get("fd0"), notes.get("/dev/tty")), **facts)
elif any(t["pushed_bytes"] == len(TAG) for t in tries):
    done = [t["terminal"] for t in tries if t["pushed_bytes"] == len(TAG)]
    result("pushed", "positive", None, "TIOCSTI took all %d bytes on %s (legacy_tiocsti %s); the "
           "harness checks what its terminal received" % (len(TAG), ", ".join(done), legacy),
           **facts)
else:
    errs = sorted({t["errno"] for t in tries if t["errno"]})
    result("refused", "positive", ",".join(errs), "TIOCSTI refused on %s (legacy_tiocsti %s)" % (
        ", ".join(t["terminal"] for t in tries), legacy), **facts)
