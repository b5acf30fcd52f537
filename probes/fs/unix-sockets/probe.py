# fs.unix-sockets: which host unix sockets can the sandbox reach by path? A read-only bind of /
# still lets connect() through, and a daemon's socket is a door to the host. Only the harness's
# canary is ever connected to; real sockets are reported by path.
import glob
import stat

CANARY = str(PARAMS.get("canary_path", ""))
PREFIXES = list(PARAMS.get("prefixes", ["", "/host", "/hostfs", "/rootfs"]))
WELL_KNOWN = list(PARAMS.get("well_known", [
    "/var/run/docker.sock", "/run/docker.sock", "/run/user/*/docker.sock",
    "/run/podman/podman.sock", "/run/user/*/podman/podman.sock",
    "/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock",
    "/run/crio/crio.sock", "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket",
    "/run/user/*/bus", "/run/systemd/private", "/run/systemd/notify",
    "/run/systemd/journal/stdout"]))
TIMEOUT_S = float(PARAMS.get("timeout_s", 2))


def is_socket(path):
    """(True/False, errno name of lstat or None)."""
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode), None
    except OSError as exc:
        return False, errno_name(exc)


def echo(path):
    """The canary's exchange -> (outcome, errno)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT_S)
    reply = b""
    with s:
        try:
            s.connect(path)
        except OSError as exc:
            name = errno_name(exc)
            return ("canary_refused" if name == "ECONNREFUSED" else "denied"), name
        try:
            s.sendall(("SANDPROBE %s %s\n" % (NONCE, INVOCATION)).encode())
            while b"\n" not in reply and len(reply) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        except OSError as exc:
            return "no_echo", errno_name(exc)
    return ("reached" if NONCE.encode() in reply else "no_echo"), None


emit("start", canary_path=CANARY, prefixes=PREFIXES)
tried = []
for prefix in (PREFIXES if CANARY else []):
    path = prefix.rstrip("/") + CANARY
    sock, err = is_socket(path)
    entry = dict(path=path, socket=sock, errno=err)
    tried.append(entry)
    if sock:
        entry["outcome"], entry["errno"] = echo(path)
        if entry["outcome"] == "reached":
            break

patterns = list(WELL_KNOWN)
bus = os.environ.get("DBUS_SESSION_BUS_ADDRESS", "")
for part in bus.split(";"):
    if part.startswith("unix:") and "path=" in part:
        patterns.append(part.split("path=", 1)[1].split(",", 1)[0])
present = []
for pattern in patterns:
    for path in sorted(glob.glob(pattern))[:8]:
        if is_socket(path)[0] and path not in present:
            present.append(path)
facts = dict(canary=tried, well_known_present=present[:32])
outcomes = [t.get("outcome") for t in tried]
if "reached" in outcomes:
    hit = tried[outcomes.index("reached")]["path"]
    result("reached", "positive", None, "the socket canary answered at %s" % hit, **facts)
elif present:
    result("daemon_sockets", "positive", None, "host sockets present: %s" % ", ".join(
        present[:8]), **facts)
elif not CANARY:
    result("no_canary", "absence", None, "no canary path given and no well-known socket "
           "present", **facts)
elif "no_echo" in outcomes:
    result("no_echo", "absence", None, "connected to the canary's path, no nonce came back",
           **facts)
elif "canary_refused" in outcomes:
    result("canary_refused", "absence", "ECONNREFUSED", "the canary's path is a socket nobody "
           "listens on", **facts)
else:
    errs = sorted(set(t.get("errno") or "" for t in tried) - {""})
    result("none", "positive", errs[0] if errs else None, "the canary's path is not reachable "
           "(%s) and no well-known socket is present" % ", ".join(errs), **facts)
