# net.abstract-unix: does the sandbox share the network namespace's abstract unix sockets? They
# have no file, so no mount, bind or read-only view hides them; only a new network namespace does.
NAME = str(PARAMS.get("name", "")) or "sandprobe-" + NONCE
TIMEOUT_S = float(PARAMS.get("timeout_s", 2))


def listed_in_proc():
    """Whether /proc/net/unix of this namespace lists the name (None: unreadable), and how many
    abstract names it lists."""
    try:
        with open("/proc/net/unix") as f:
            paths = [line.split()[-1] for line in f.read().splitlines()[1:] if len(line.split()) > 7]
    except OSError:
        return None, None
    abstract = [p for p in paths if p.startswith("@")]
    return ("@" + NAME) in abstract, len(abstract)


emit("start", name="@" + NAME)
listed, abstract_names = listed_in_proc()
facts = dict(name="@" + NAME, listed_in_proc_net_unix=listed, abstract_names_listed=abstract_names)
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
except OSError as exc:
    result("blocked", "positive", errno_name(exc), "no unix socket could be made", **facts)
    raise SystemExit(0)
s.settimeout(TIMEOUT_S)
reply, err = b"", None
try:
    s.connect("\0" + NAME)
except OSError as exc:
    name = errno_name(exc)
    s.close()
    if name == "ECONNREFUSED":
        result("refused", "positive", name, "no listener with that name in this network "
               "namespace", connected=False, **facts)
    elif name in ("EPERM", "EACCES", "EAFNOSUPPORT"):
        result("blocked", "positive", name, "the connect was refused", connected=False, **facts)
    else:
        result("error", "absence", name, "unexpected %s" % type(exc).__name__, **facts)
    raise SystemExit(0)
with s:
    try:
        s.sendall(("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode())
        while b"\n" not in reply and len(reply) < 4096:
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
    except OSError as exc:
        err = errno_name(exc)
if NONCE.encode() in reply:
    result("reached", "positive", None, "the abstract socket answered with the nonce",
           connected=True, **facts)
else:
    result("no_echo", "absence", err, "connected, but no nonce came back", connected=True,
           reply_bytes=len(reply), **facts)
