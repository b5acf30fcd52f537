# proc.host-pids: which processes can the script see? Lists /proc/[0-9]*, works out its own tree
# (its ancestors up to pid 1 through /proc/<pid>/stat's ppid, itself, its descendants) and counts
# the rest as foreign. Kernel threads (kthreadd, ppid 0/2) are foreign too: they are the host's.
# Pids are read in /proc's own numbering (/proc/self), which differs from os.getpid() when /proc
# belongs to another pid namespace. Only `comm` (the 15-byte task name) is ever reported: never
# cmdline or environ, which can hold secrets.

PROC = PARAMS.get("proc", "/proc")
MAX_NAMES = 5


def read_stat(pid):
    """(ppid, comm) from /proc/<pid>/stat, or None when the process is gone or unreadable.
    comm sits in parentheses and may itself contain spaces and ')'."""
    try:
        with open(os.path.join(PROC, str(pid), "stat"), "rb") as f:
            data = f.read(4096).decode("ascii", "replace")
    except OSError:
        return None
    left, right = data.find("("), data.rfind(")")
    fields = data[right + 2:].split()
    if left < 0 or right < left or len(fields) < 2:
        return None
    return int(fields[1]), data[left + 1:right][:64]  # kernel threads' names may pass 15 bytes


def own_tree(own, ppid_of):
    """Pids of own's ancestors (up to pid 1), own itself and its descendants."""
    tree, pid = set(), own
    while pid > 0 and pid not in tree:  # ancestors; a loop cannot happen, but never spin
        tree.add(pid)
        pid = ppid_of.get(pid, 0)
    for pid in ppid_of:  # descendants: some ancestor of theirs is own
        chain, p = set(), pid
        while p > 0 and p not in chain and p != own:
            chain.add(p)
            p = ppid_of.get(p, 0)
        if p == own:
            tree |= chain
    return tree


emit("start", proc=PROC)
try:
    pids = sorted(int(n) for n in os.listdir(PROC) if n.isdigit())
except OSError as exc:
    result("no_proc", "absence", errno_name(exc), "%s cannot be listed" % PROC, proc=PROC)
    raise SystemExit(0)
try:
    own = int(os.readlink(os.path.join(PROC, "self")))
except (OSError, ValueError):
    own = None  # /proc of a pid namespace this process is not in: every process there is foreign
stats = {pid: s for pid, s in ((pid, read_stat(pid)) for pid in pids) if s is not None}
if not stats:
    result("no_proc", "absence", None, "%s lists no readable process" % PROC, proc=PROC,
           listed=len(pids))
    raise SystemExit(0)
tree = own_tree(own, {pid: s[0] for pid, s in stats.items()}) if own in stats else set()
foreign = [pid for pid in stats if pid not in tree]
names = list(dict.fromkeys(stats[pid][1] for pid in foreign))[:MAX_NAMES]  # distinct, pid order
facts = dict(proc=PROC, visible=len(stats), own_tree=len(tree), foreign=len(foreign),
             foreign_comm=names, own_pid=own, own_pid_visible=own in stats)
if foreign:
    result("foreign_visible", "positive", None, "%d of %d visible processes are outside this "
           "probe's tree (e.g. %s)" % (len(foreign), len(stats), ", ".join(names)), **facts)
else:
    result("own_only", "positive", None, "only this probe's own tree is visible (%d processes)"
           % len(stats), **facts)
