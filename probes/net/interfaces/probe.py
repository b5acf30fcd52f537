# net.interfaces: which network interfaces does the script's own network namespace have?
# Counted with if_nameindex() (netlink) or /proc/net/dev, which follow the namespace.
# /sys/class/net is NOT evidence: a sandbox that bind-mounts the host's /sys (bubblewrap
# --ro-bind / /) shows the host's interfaces there, and gVisor has no such directory.
import fcntl
import struct

IFF_UP, IFF_LOOPBACK = 0x1, 0x8
SIOCGIFFLAGS = 0x8913


def interface_names():
    try:
        return [name for _, name in socket.if_nameindex()], "if_nameindex"
    except OSError:
        with open("/proc/net/dev") as f:  # two header lines, then "  name: counters"
            return [line.split(":", 1)[0].strip() for line in f.readlines()[2:]], "/proc/net/dev"


def flags_of(name):
    """SIOCGIFFLAGS, or None when the ioctl is not allowed."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            req = struct.pack("16sH22x", name.encode()[:15], 0)
            return struct.unpack("16sH22x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, req))[1]
    except OSError:
        return None


def sys_class_net():
    try:
        return sorted(os.listdir("/sys/class/net"))[:64]
    except OSError as exc:
        return errno_name(exc)


emit("start")
names, source = interface_names()
details = []
for name in names:
    flags = flags_of(name)
    loopback = bool(flags & IFF_LOOPBACK) if flags is not None else name == "lo"
    up = None if flags is None else bool(flags & IFF_UP)
    details.append({"name": name, "loopback": loopback, "up": up})
others = [d["name"] for d in details if not d["loopback"]]
# Tunnel fallback devices (tunl0, sit0, ip6tnl0) appear DOWN in every new namespace once their
# modules are loaded; a DOWN device carries no traffic, so only UP (or unknown) ones count.
live = [d["name"] for d in details if not d["loopback"] and d["up"] is not False]
# Lists are capped (a node can have hundreds of veths): a record line must stay well under 64 KiB.
facts = dict(count=len(names), names=names[:64], interfaces=details[:64], source=source,
             down_interfaces=sorted(set(others) - set(live))[:64],
             sys_class_net=sys_class_net())  # reported for contrast only, never judged
if live:
    result("other_interfaces", "positive", None, "non-loopback interfaces: " + ", ".join(live[:8]),
           **facts)
else:
    extra = " (others present but DOWN: %s)" % ", ".join(others[:8]) if others else ""
    result("loopback_only", "positive", None, "only loopback in this namespace" + extra, **facts)
