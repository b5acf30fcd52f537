# state.persists: does anything one evaluation leaves behind reach a later one? A REPL service
# that keeps one interpreter, one working directory or one /tmp for every caller leaks state
# between tasks, and a warm pool of N sandboxes leaks it only to every N-th caller. Every call
# plants its own marks; every call looks for the marks of every earlier call (their results come
# as PARAMS["previous"], in order), removes what it finds and names which call found which
# call's mark. Concurrent pair: two calls run at the same moment (PARAMS["concurrent_with"] names
# the other); each plants, then keeps looking for the other's marks for overlap_s, so a service
# that lets a second caller into a sandbox in flight is caught; a closing call gathers it all.
# Every mark is named from the run's nonce, the invocation and the call number, so a call can
# look for a mark whose result it has not seen (the other call of the pair).

import hashlib, signal, time

CALL = int(PARAMS.get("call", 1) or 1)
CALLS = max(int(PARAMS.get("calls", 8) or 0), 0)
CONCURRENT = bool(PARAMS.get("concurrent", True))
PARTNER = int(PARAMS.get("concurrent_with", 0) or 0)  # > 0: this call is one of the pair
OVERLAP_S = min(max(float(PARAMS.get("overlap_s", 3)), 0.5), 20.0)
LAST = CALLS + 3 if CONCURRENT else CALLS  # the closing call after the pair, or the last one
PREVIOUS = PARAMS.get("previous", []) or []
if isinstance(PREVIOUS, dict):  # one earlier result (the two-call shape)
    PREVIOUS = [PREVIOUS]
HOLD_S = min(max(float(PARAMS.get("hold_s", 10)), 1.0), 30.0)
NAME = ".sandprobe-state-%s-%s" % (NONCE, INVOCATION)
ENV_NAME = "SANDPROBE_STATE_" + "".join(c if c.isalnum() else "_" for c in INVOCATION).upper()


def token_of(call):
    """The content of call `call`'s files and env var: only this run's calls can know it."""
    return hashlib.sha256(("%s %s %d" % (NONCE, INVOCATION, call)).encode()).hexdigest()[:16]


def paths_of(call):
    """Where call `call` plants its files, seen from this call (same cwd and $HOME shape)."""
    name = "%s-c%d" % (NAME, call)
    home = os.environ.get("HOME") or os.path.expanduser("~")
    return {"tmp": os.path.join("/tmp", name + "-tmp"), "cwd": os.path.join(os.getcwd(), name + "-cwd"),
            "home": os.path.join(home, name + "-home")}


def start_time(pid):
    """Field 22 of /proc/<pid>/stat (clock ticks after boot), or None; with the pid it names one
    process even across PID namespaces on the same kernel."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    if fields[:1] in ([b"Z"], [b"X"]):
        return None
    return int(fields[19])


def plant_file(path, token):
    try:
        with open(path, "w") as f:
            f.write(token)
        return {"path": path}
    except OSError as exc:
        return {"path": path, "errno": errno_name(exc)}


def plant_process():
    """setsid + double fork a silent process that sleeps HOLD_S seconds -> (pid, start) or error."""
    read_fd, write_fd = os.pipe()
    try:
        child = os.fork()
    except OSError as exc:
        return {"errno": errno_name(exc)}
    if child == 0:
        try:
            os.close(read_fd)
            os.setsid()
            if os.fork() == 0:
                os.write(write_fd, str(os.getpid()).encode())
                os.close(write_fd)
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # hold no pipe of the caller open
                    os.dup2(null, fd)
                set_comm(call_tag("spst", CALL))  # findable by name by the other call of a pair
                time.sleep(HOLD_S)
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(write_fd)
    os.waitpid(child, 0)
    with os.fdopen(read_fd, "rb") as reader:
        text = reader.read(32).decode(errors="replace").strip()
    if not text.isdigit():
        return {"errno": "no_grandchild"}
    return {"pid": int(text), "start": start_time(int(text)), "pidns": pid_namespace()}


def pid_namespace():
    """This process's PID namespace ("pid:[4026531836]"): a pid names a process only inside it
    (and /proc may show another namespace's processes when it was not remounted)."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def plant(token):
    """This call's marks: a file in /tmp, in the working directory and in $HOME, an environment
    variable (kept only by an in-process REPL) and a detached process."""
    planted = {key: plant_file(path, token) for key, path in paths_of(CALL).items()}
    planted["process"] = plant_process()
    env_name = "%s_C%d" % (ENV_NAME, CALL)
    os.environ[env_name] = token
    planted["env"] = {"name": env_name}
    return planted


def look_for_partner(call, found):
    """The marks of the other call of the pair, in flight now, found by name: adds to `found`
    (mark -> True) and returns it. Leaves them in place: the other call is still using them."""
    token = token_of(call)
    for key, path in paths_of(call).items():
        try:
            with open(path) as f:
                if f.read(64) == token:
                    found[{"tmp": "tmp file", "cwd": "cwd file", "home": "$HOME file"}[key]] = True
        except OSError:
            pass
    if os.environ.get("%s_C%d" % (ENV_NAME, call)) == token:
        found["env var"] = True
    mine = pid_namespace()
    for pid in pids_named(call_tag("spst", call)):
        try:  # only in this PID namespace: a host /proc on view is proc.host-pids' finding
            if mine is not None and os.readlink("/proc/%d/ns/pid" % pid) == mine:
                found["process"] = True
        except OSError:
            pass
    return found


def look_for(entry):
    """The marks of one earlier call's result still here -> ["tmp file", ...]; removes them (and
    kills its process) so nothing outlives the run."""
    token, planted = entry.get("token", ""), entry.get("planted") or {}
    found = []
    for key, what in (("tmp", "tmp file"), ("cwd", "cwd file"), ("home", "$HOME file")):
        if found_file(planted.get(key), token):
            found.append(what)
    env_name = (planted.get("env") or {}).get("name")
    if env_name and os.environ.get(env_name) == token:
        found.append("env var")
    proc = planted.get("process") or {}
    if (proc.get("pid") and proc.get("start") is not None and proc.get("pidns") is not None
            and proc["pidns"] == pid_namespace() and start_time(proc["pid"]) == proc["start"]):
        found.append("process")
        try:
            os.kill(proc["pid"], signal.SIGKILL)  # never outlive the run
        except OSError:
            pass
    return found


def remove_own(planted):
    for key in ("tmp", "cwd", "home"):
        path = (planted.get(key) or {}).get("path")
        if path and "errno" not in planted.get(key, {}):
            try:
                os.unlink(path)
            except OSError:
                pass
    pid = (planted.get("process") or {}).get("pid")
    if pid and planted["process"].get("pidns") == pid_namespace() and \
            start_time(pid) == planted["process"].get("start"):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def found_file(entry, token):
    path = (entry or {}).get("path")
    if not path or "errno" in entry:
        return False
    try:
        with open(path) as f:
            same = f.read(64) == token
    except OSError:
        return False
    if same:
        try:
            os.unlink(path)
        except OSError:
            pass
    return same


def gather(earlier):
    """Every "call k found call j's <mark>" of the earlier calls (each result carries its own, so
    `previous` grows linearly with the calls and 32 of them fit in one script)."""
    pairs = []
    for e in earlier:
        pairs += [p for p in e.get("pairs") or [] if isinstance(p, str) and p not in pairs]
    return pairs


def pair_note(earlier):
    """What the concurrent pair showed: their windows overlapped (both in flight) or not."""
    pair = [e for e in earlier if e.get("concurrent_with")]
    if len(pair) < 2:
        return "" if not CONCURRENT else "; the concurrent pair left no result"
    a, b = pair[-2], pair[-1]
    try:
        overlap = min(a["window"][1], b["window"][1]) - max(a["window"][0], b["window"][0])
    except (KeyError, IndexError, TypeError):
        return "; the concurrent pair reported no window"
    if overlap <= 0:
        return ("; calls %s and %s did not overlap (the service ran them one after the other): "
                "nothing shared between callers in flight could be seen" % (a["call"], b["call"]))
    return "; calls %s and %s were in flight together for %.1fs" % (a["call"], b["call"], overlap)


def main():
    emit("start", call=CALL, calls=CALLS, concurrent=CONCURRENT, partner=PARTNER, hold_s=HOLD_S)
    earlier = [e for e in PREVIOUS if isinstance(e, dict)]
    pairs = []  # this call's own findings; the last call adds every earlier call's
    for e in earlier:
        if e.get("made"):
            pairs += ["call %d found call %s's %s" % (CALL, e.get("call", "?"), what)
                      for what in look_for(e)]
    token = token_of(CALL)
    began = time.time()
    planted = plant(token)
    made = [k for k, v in planted.items() if "errno" not in v]
    looked_at = [e.get("call") for e in earlier if e.get("made")]
    facts = dict(call=CALL, calls=CALLS, token=token, planted=planted, made=made)
    if CALL >= LAST:  # only the judged call says what was looked at: `previous` stays small
        facts["looked_at"] = looked_at
    if PARTNER:  # one of the pair: keep the marks up and keep looking for the other's
        found, until = {}, time.monotonic() + OVERLAP_S
        while time.monotonic() < until:
            look_for_partner(PARTNER, found)
            time.sleep(0.2)
        pairs += ["call %d found call %d's %s (both in flight)" % (CALL, PARTNER, what)
                  for what in found]
        facts.update(concurrent_with=PARTNER, window=[round(began, 3), round(time.time(), 3)])
    if CALL >= LAST:
        remove_own(planted)  # nobody comes after the last call to look for these
        gathered = gather(earlier)
        pairs = gathered + [p for p in pairs if p not in gathered]
    facts["pairs"] = pairs
    pair_results = [e for e in PREVIOUS[-2:] if isinstance(e, dict) and e.get("concurrent_with")]
    if CALL >= LAST and CONCURRENT and not pairs and len(pair_results) < 2:
        result("no_pair", "absence", detail="the concurrent pair left %d result(s) of 2: the "
               "check of callers in flight was not made" % len(pair_results), **facts)
        return
    if pairs and CALL < LAST:  # an intermediate call: its own findings ride in "pairs"
        result("persisted", "positive", detail="call %d found %d mark(s)" % (CALL, len(pairs)),
               **facts)
    elif pairs:
        result("persisted", "positive", detail="; ".join(pairs[:8]), **facts)
    elif CALL < LAST:
        result("planted", "positive", detail="call %d of %d planted: %s" % (
            CALL, LAST, ", ".join(made) or "nothing"), **facts)
    elif not looked_at:
        result("not_planted", "absence", detail="no earlier call planted anything to look for",
               **facts)
    else:
        result("fresh", "absence", detail="calls 2..%d found no mark of any earlier call%s" % (
            LAST, pair_note(earlier)), **facts)


main()
