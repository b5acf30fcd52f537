# cred.env-secrets: do the harness's planted canary secrets reach any environment the script can
# read: its own, and every other process's through /proc/<pid>/environ (a sandbox's launcher or
# its pid 1 often still carries the caller's environment)? Which secret-looking names are there?
# Values are only hashed in memory, never reported: names, lengths and sha256 prefixes only.
import re

CANARY_NAME = PARAMS.get("canary_name", "{canary.env_name}")
CANARY_SHA256 = PARAMS.get("canary_sha256", "{canary.env_sha256}").lower()
# The same words as the harness's given secrets (harness/drivers/given_secrets.cc).
SECRET_LIKE = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MAX_PIDS = 4096  # bounded on a host with many processes (the local control sees them all)
MAX_ENVIRON = 1 << 20  # bytes read from one /proc/<pid>/environ
MAX_LISTED = 50  # leaks, own secret-looking names
MAX_OTHERS = 10  # readable processes without a leak, other processes' secret-looking names


def pairs_of(text):
    """"N=sha,N=sha" -> {(name, lowercase hex sha256)}; placeholders left unfilled are skipped."""
    out = set()
    for item in str(text).split(","):
        name, sep, digest = item.strip().partition("=")
        if sep and name and "{" not in name:
            out.add((name, digest.strip().lower()))
    return out


# What to look for: (name, sha256) -> "planted" (the harness's canaries: canary_name and
# `canaries`) or "given" (what an arm's own configuration gives its sandbox, e.g. a docker
# manifest's config.Env: the same for every arm, `given_secrets`).
WANTED = {pair: "given" for pair in pairs_of(PARAMS.get("given_secrets", "{canary.env_given}"))}
WANTED.update({pair: "planted" for pair in pairs_of(PARAMS.get("canaries", "{canary.env_set}"))})
if CANARY_NAME:
    WANTED[(CANARY_NAME, CANARY_SHA256)] = "planted"
CANARIES = sorted({name for name, _ in WANTED})


def parse_environ(data):
    """b"A=1\\0B=2\\0" -> [(name, value)] as bytes: the block the process was started with."""
    pairs = []
    for entry in data.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            pairs.append((name, value))
    return pairs


def read_proc(pid):
    """(comm, environ pairs or None, errno name or None) of /proc/<pid>."""
    try:
        with open("/proc/%s/comm" % pid, "rb") as f:
            comm = f.read(64).decode("ascii", "replace").strip()
    except OSError:
        comm = "?"
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            return comm, parse_environ(f.read(MAX_ENVIRON)), None
    except OSError as e:
        return comm, None, errno_name(e)


emit("start", canary_name=CANARY_NAME, canaries=CANARIES)
own_pid = os.getpid()
# The script's own environment as Python holds it (os.environb: the exact bytes), then every
# other process /proc shows: bubblewrap's pid 1, a container's init or shell, the launcher.
sources = [(own_pid, "self", list(os.environb.items()))]
scanned, unreadable, truncated = 0, {}, False
try:
    pids = sorted((int(p) for p in os.listdir("/proc") if p.isdigit()))
    proc_error = None
except OSError as e:
    pids, proc_error = [], errno_name(e)
for pid in pids:
    if pid == own_pid:
        continue
    if scanned >= MAX_PIDS:
        truncated = True
        break
    scanned += 1
    comm, pairs, err = read_proc(pid)
    if pairs is None:
        if err not in ("ENOENT", "ESRCH"):  # (a process that ended meanwhile is no finding)
            unreadable[err] = unreadable.get(err, 0) + 1
        continue
    sources.append((pid, comm, pairs))

leaks, readable, other_names = [], [], set()
for pid, comm, pairs in sources:
    own = pid == own_pid
    names = []
    for raw_name, value in pairs:
        name = raw_name.decode("ascii", "replace")
        names.append(name)
        if name in CANARIES:
            # Matching the hash (not just the name) proves it is the known value.
            kind = WANTED.get((name, hashlib.sha256(value).hexdigest()))
            if kind:
                leaks.append(dict(pid=pid, comm="self" if own else comm, name=name, own=own,
                                  kind=kind, length=len(value),
                                  sha256_prefix=sha256_prefix(value)))
    if not own:
        readable.append(dict(pid=pid, comm=comm, env_count=len(names)))
        other_names.update(n for n in names if SECRET_LIKE.search(n))

# Processes that leaked, then a few others: a host shows hundreds to the control, and every byte
# of the record is evidence some report carries.
leaking = {l["pid"] for l in leaks}
shown = [p for p in readable if p["pid"] in leaking][:MAX_LISTED]
shown += [p for p in readable if p["pid"] not in leaking][:MAX_OTHERS]
own_names = list(os.environ)
primary = [l for l in leaks if l["name"] == CANARY_NAME]
facts = dict(
    canary_name=CANARY_NAME, canary_names=CANARIES,
    canary_name_present=bool(CANARY_NAME) and CANARY_NAME in os.environ,
    canary_matches=bool(leaks), primary_matches=bool(primary),
    own_env_matches=sorted({l["name"] for l in leaks if l["own"]}),
    leaks=leaks[:MAX_LISTED], leak_count=len(leaks),
    env_count=len(own_names),
    secret_like_names=sorted(n for n in own_names if SECRET_LIKE.search(n))[:MAX_LISTED],
    other_processes_readable=shown, other_processes_readable_count=len(readable),
    other_processes_unreadable=unreadable, processes_scanned=scanned, scan_truncated=truncated,
    other_secret_like_names=sorted(other_names)[:MAX_OTHERS], proc_error=proc_error)
if leaks:
    # Grouped by process, its own environment first: "GITHUB_TOKEN, OPENAI_API_KEY in pid 1
    # (bwrap)", or "all 6 in ..." when every one of its kind is there (the names are in `leaks`);
    # three processes at most (the control reads its neighbours too).
    parts = []
    for kind, what in [("given", "secret its configuration gives the sandbox"),
                       ("planted", "planted canary secret")]:
        by_where = {}
        for l in leaks:
            if l["kind"] == kind:
                where = (0, "its own environment") if l["own"] else \
                    (l["pid"], "pid %d (%s)" % (l["pid"], l["comm"]))
                by_where.setdefault(where, set()).add(l["name"])
        every = {name for (name, _), k in WANTED.items() if k == kind}
        places = ["%s in %s" % ("all %d" % len(names) if names == every and len(names) > 2
                                else ", ".join(sorted(names)), where[1])
                  for where, names in sorted(by_where.items())]
        if places:
            more = len(places) - 3
            parts.append("%s readable: %s%s" % (what, "; ".join(places[:3]),
                                                "; %d more processes" % more if more > 0 else ""))
    result("present", "positive", None, "; ".join(parts), **facts)
elif not CANARIES:
    result("absent", "absence", None, "no canary configured: nothing to look for", **facts)
else:
    seen = "its own environment and %d other process environment(s)" % len(readable)
    if proc_error:
        seen = "its own environment (/proc unreadable: %s)" % proc_error
    result("absent", "positive", None, "%s inspected: no canary value" % seen, **facts)
