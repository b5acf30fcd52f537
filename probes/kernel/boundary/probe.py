# kernel.boundary: whose kernel answers this script's system calls? Under runc and bubblewrap it is
# the host's; under gVisor a user-space kernel (release 4.4.0, "Starting gVisor..." in its log).
import ctypes

HOST_RELEASE = PARAMS.get("host_release", "{host.kernel_release}")
emit("start", host_release=HOST_RELEASE)
release = os.uname().release
facts = dict(release=release, host_release=HOST_RELEASE)
try:
    with open("/proc/version") as f:
        facts["proc_version"] = f.read(200).strip()
except OSError as exc:
    facts["proc_version"] = errno_name(exc)
facts["proc_modules"] = os.path.exists("/proc/modules")
try:  # syslog(2) READ_ALL: often EPERM for an unprivileged process; gVisor answers with its own
    buf = ctypes.create_string_buffer(4096)
    n = ctypes.CDLL(None, use_errno=True).klogctl(3, buf, 4096)
    facts["kernel_log_head"] = buf.raw[:max(n, 0)].decode("ascii", "replace").splitlines()[:1]
except (OSError, AttributeError):
    facts["kernel_log_head"] = None
if not HOST_RELEASE:
    result("error", "absence", None, "no host_release given", **facts)
elif release == HOST_RELEASE:
    result("host_kernel", "positive", None, "the host's kernel %s answers" % release, **facts)
else:
    result("other_kernel", "positive", None,
           "kernel %s answers, not the host's %s" % (release, HOST_RELEASE), **facts)
