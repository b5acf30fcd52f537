# fs.docker-socket: is a container daemon's socket inside the sandbox? Whoever can talk to it can
# start a privileged container on the host. Only GET /_ping is sent: it changes nothing.
import stat

PATHS = list(PARAMS.get("paths", ["/var/run/docker.sock", "/run/docker.sock",
                                  "/run/containerd/containerd.sock",
                                  "/var/run/containerd/containerd.sock"]))
TIMEOUT_S = float(PARAMS.get("timeout_s", 2))

emit("start", paths=PATHS)
found, answered = [], None
for path in PATHS:
    try:
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            continue
    except OSError:
        continue
    entry = {"path": path, "errno": None}
    found.append(entry)
    if "docker" not in path or answered:
        continue
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT_S)
    try:
        s.connect(path)
        s.sendall(b"GET /_ping HTTP/1.0\r\nHost: localhost\r\n\r\n")
        reply = s.recv(512)
        if reply.startswith(b"HTTP/"):
            answered = path
    except OSError as exc:
        entry["errno"] = errno_name(exc)
    finally:
        s.close()
if answered:
    result("daemon_answers", "positive", None, "the daemon at %s answered" % answered, found=found)
elif found:
    result("socket_present", "positive", found[0]["errno"],
           "socket present: %s" % ", ".join(f["path"] for f in found), found=found)
else:
    result("no_socket", "positive", None, "no daemon socket at the usual paths", found=[])
