# priv.userns: can the script create a user namespace, the usual first step from no privileges
# to the kernel's namespaced attack surface? Tried in a child, never read from sysctls
# (docs/probes.md, priv.userns).
import ctypes

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
libc = ctypes.CDLL(None, use_errno=True)


def child():
    """In the forked child: unshare, then what it gives. Returns a JSON text."""
    if libc.unshare(CLONE_NEWUSER) != 0:
        return json.dumps({"created": False, "errno": _errno.errorcode.get(ctypes.get_errno())})
    caps = None
    try:
        with open("/proc/self/status") as f:
            caps = next((l.split(":", 1)[1].strip() for l in f if l.startswith("CapEff:")), None)
    except OSError:
        pass
    mount = None
    if libc.unshare(CLONE_NEWNS) != 0:
        mount = "unshare(CLONE_NEWNS): %s" % _errno.errorcode.get(ctypes.get_errno())
    else:
        target = b"/tmp" if os.path.isdir("/tmp") else b"/"
        ok = libc.mount(b"none", target, b"tmpfs", 0, None) == 0
        mount = "mounted a tmpfs" if ok else "mount: %s" % _errno.errorcode.get(ctypes.get_errno())
    return json.dumps({"created": True, "cap_eff_inside": caps, "mount": mount})


emit("start", uid=os.getuid(), euid=os.geteuid())
try:
    rfd, wfd = os.pipe()
    pid = os.fork()
except OSError as exc:
    result("error", "absence", errno_name(exc), "could not fork the child that tries it")
    raise SystemExit(0)
if pid == 0:
    os.close(rfd)
    try:
        out = child()
    except BaseException as exc:  # the child must never return into the probe
        out = json.dumps({"error": type(exc).__name__})
    try:
        os.write(wfd, out.encode())
    finally:
        os._exit(0)
os.close(wfd)
data = b""
while True:
    chunk = os.read(rfd, 4096)
    if not chunk:
        break
    data += chunk
os.waitpid(pid, 0)
try:
    got = json.loads(data.decode())
except ValueError:
    got = {"error": "no answer from the child"}
if got.get("created"):
    result("created", "positive", None, "user namespace created; inside it: CapEff %s, %s"
           % (got.get("cap_eff_inside"), got.get("mount")), **got)
elif got.get("errno"):
    result("refused", "positive", got["errno"], "unshare(CLONE_NEWUSER): %s" % got["errno"],
           created=False)
else:
    result("error", "absence", None, "the child gave no answer: %s" % got.get("error"), **got)
