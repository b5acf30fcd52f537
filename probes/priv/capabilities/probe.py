# priv.capabilities: which capabilities does the script hold? Effective capabilities are what a
# process can use right now; the bounding set is what it could regain (a setuid or file-capability
# binary): a non-root process in a --privileged container has none effective but all bounded.
NAMES = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
         "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN",
         "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE",
         "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
         "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
         "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ",
         "PERFMON", "BPF", "CHECKPOINT_RESTORE"]
DANGEROUS = {"SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE", "SYS_MODULE", "SYS_RAWIO", "DAC_OVERRIDE",
             "DAC_READ_SEARCH", "NET_RAW", "SYS_BOOT", "BPF", "PERFMON", "SETUID", "SETGID"}


def caps(mask, last):
    return [("CAP_" + NAMES[i]) if i < len(NAMES) else "cap_%d" % i
            for i in range(last + 1) if mask >> i & 1]


emit("start")
try:
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    eff, bnd = int(fields["CapEff"].strip(), 16), int(fields["CapBnd"].strip(), 16)
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except OSError:
        last = 40
except (OSError, KeyError, ValueError) as exc:
    result("error", "absence", errno_name(exc), "cannot read CapEff from /proc/self/status")
    raise SystemExit(0)
effective = caps(eff, last)
dangerous = [c for c in effective if c[4:] in DANGEROUS]
bounded_dangerous = [c for c in caps(bnd, last) if c[4:] in DANGEROUS]
facts = dict(cap_eff="%016x" % eff, cap_bnd="%016x" % bnd, effective=effective,
             dangerous=dangerous, bounding_dangerous=bounded_dangerous,
             bounding_count=len(caps(bnd, last)))
if eff:
    result("capable", "positive", None, "%d effective capabilities, dangerous: %s" % (
        len(effective), ", ".join(dangerous) or "none"), **facts)
elif bounded_dangerous:
    result("can_regain", "positive", None, "none effective, but the bounding set keeps %s" %
           ", ".join(bounded_dangerous), **facts)
else:
    result("no_capabilities", "positive", None, "CapEff is zero and no dangerous capability "
           "is left in the bounding set", **facts)
