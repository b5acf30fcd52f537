# cred.keyring: can code in the sandbox read the keys of the process that launched it? Keyrings
# are not namespaced like files: a session keyring is inherited across fork and exec, and keys
# are checked against the kernel's uid, not the namespace's. Payloads are hashed, never printed.
import ctypes
import platform

NUMBERS = {"x86_64": dict(keyctl=250), "aarch64": dict(keyctl=219)}
JOIN, LINK, SEARCH, READ = 1, 8, 10, 11  # KEYCTL_* operations
RINGS = {"thread": -1, "process": -2, "session": -3, "user": -4, "user-session": -5}
FILTER_ERRNOS = ("EPERM", "ENOSYS")
SESSION_KEY = str(PARAMS.get("session_key", ""))
USER_KEY = str(PARAMS.get("user_key", ""))
CANARY_SHA256 = str(PARAMS.get("canary_sha256", ""))

emit("start", arch=platform.machine(), session_key=SESSION_KEY, user_key=USER_KEY)
NR = NUMBERS.get(platform.machine())
if not CANARY_SHA256 or not (SESSION_KEY or USER_KEY):
    result("no_canary", "absence", None, "no keyring canary was planted (see the run's notes)")
    raise SystemExit(0)
if NR is None:
    result("error", "absence", None, "no syscall table for %s" % platform.machine())
    raise SystemExit(0)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
errnos = []


def keyctl(*args):
    """(return value, errno name or None) of one keyctl(2) call."""
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(NR["keyctl"]),
                       *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    err = _errno.errorcode.get(ctypes.get_errno(), "E?") if ret < 0 else None
    if err:
        errnos.append(err)
    return ret, err


def listed_keys():
    """/proc/keys -> ([(serial, type, description)], errno or None). Lists what we may view."""
    try:
        with open("/proc/keys") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        return [], errno_name(exc)
    keys = []
    for line in lines:
        cols = line.split(None, 8)
        if len(cols) == 9:
            desc = cols[8].rsplit(": ", 1)[0] if cols[7] != "keyring" else cols[8].split(":")[0]
            keys.append((int(cols[0], 16), cols[7], desc))
    return keys, None


def read_key(serial):
    """(payload hash facts, errno) of KEYCTL_READ; the payload itself never leaves here."""
    buf = ctypes.create_string_buffer(4096)
    n, err = keyctl(READ, serial, buf, 4096)
    if n < 0:
        return None, err
    data = buf.raw[:min(n, 4096)]
    return dict(length=n, sha256_prefix=sha256_prefix(data),
                canary=hashlib.sha256(data).hexdigest() == CANARY_SHA256), None


found = {}  # description -> facts


def consider(desc, serial, how):
    entry = found.setdefault(desc, dict(description=desc, found_by=[], read=None, errno=None))
    if how not in entry["found_by"]:
        entry["found_by"].append(how)
    if entry["read"] is None:
        facts, err = read_key(serial)
        entry["read"], entry["errno"] = facts, err
        if facts:
            entry["read_after"] = how


targets = [d for d in (SESSION_KEY, USER_KEY) if d]
listed, listed_errno = listed_keys()
# 1. The keyrings this process possesses, searched for each canary description.
for desc in targets:
    for ring, spec in RINGS.items():
        serial, _ = keyctl(SEARCH, spec, b"user", desc.encode(), 0)
        if serial > 0:
            consider(desc, serial, "search of the %s keyring" % ring)
# 2. The ids /proc/keys lists, read directly.
for serial, kind, desc in listed:
    if kind == "user" and desc in targets:
        consider(desc, serial, "/proc/keys id")
# 3. A private session keyring (this process's alone), linking every keyring it may link.
linked = []
if not any(e["read"] and e["read"]["canary"] for e in found.values()):
    joined, _ = keyctl(JOIN, None)
    if joined > 0:
        for serial, kind, desc in listed:
            if kind == "keyring" and keyctl(LINK, serial, RINGS["session"])[0] == 0:
                linked.append(desc)
        keyctl(LINK, RINGS["user"], RINGS["session"])
        for desc in targets:
            serial, _ = keyctl(SEARCH, RINGS["session"], b"user", desc.encode(), 0)
            if serial > 0:
                consider(desc, serial, "after linking %s" % (", ".join(linked) or "@u"))

keys = list(found.values())
facts = dict(keys=keys, proc_keys=len(listed), proc_keys_errno=listed_errno,
             linked_keyrings=linked[:10], errnos=sorted(set(errnos)))
leaked = [e for e in keys if e["read"] and e["read"]["canary"]]
if leaked:
    result("readable", "positive", None, "the keyring canary was read: %s" % "; ".join(
        "%s (%s)" % (e["description"], e["read_after"]) for e in leaked), **facts)
elif keys:
    result("visible", "positive", keys[0]["errno"], "the keyring canary was found and could not "
           "be read: %s" % ", ".join(e["description"] for e in keys), **facts)
elif errnos and all(e in FILTER_ERRNOS for e in errnos):
    result("no_keyctl", "positive", errnos[0], "keyctl refused: a filter, or no keyrings",
           **facts)
else:
    result("not_found", "positive", "ENOKEY", "no keyring this process has or may link holds "
           "the canary", **facts)
