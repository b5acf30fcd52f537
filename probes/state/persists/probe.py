# state.persists: does anything one evaluation leaves behind reach a later one? A REPL service
# that keeps one interpreter, one working directory or one /tmp for every caller leaks state
# between tasks, and a warm pool of N sandboxes leaks it only to every N-th caller. Every call
# plants its own marks; every call looks for the marks of every earlier call (their results come
# as PARAMS["previous"], in order), removes what it finds and names which call found which
# call's mark.

import secrets, signal, time

CALL = int(PARAMS.get("call", 1) or 1)
CALLS = max(int(PARAMS.get("calls", 8) or 8), 1)
PREVIOUS = PARAMS.get("previous", []) or []
if isinstance(PREVIOUS, dict):  # one earlier result (the two-call shape)
    PREVIOUS = [PREVIOUS]
HOLD_S = min(max(float(PARAMS.get("hold_s", 10)), 1.0), 30.0)
NAME = ".sandprobe-state-%s-%s" % (NONCE, INVOCATION)
ENV_NAME = "SANDPROBE_STATE_" + "".join(c if c.isalnum() else "_" for c in INVOCATION).upper()


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
    name = "%s-c%d" % (NAME, CALL)
    home = os.environ.get("HOME") or os.path.expanduser("~")
    planted = {
        "tmp": plant_file(os.path.join("/tmp", name + "-tmp"), token),
        "cwd": plant_file(os.path.join(os.getcwd(), name + "-cwd"), token),
        "home": plant_file(os.path.join(home, name + "-home"), token),
        "process": plant_process(),
    }
    env_name = "%s_C%d" % (ENV_NAME, CALL)
    os.environ[env_name] = token
    planted["env"] = {"name": env_name}
    return planted


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


def main():
    emit("start", call=CALL, calls=CALLS, hold_s=HOLD_S)
    earlier = [e for e in PREVIOUS if isinstance(e, dict)]
    pairs = []  # every "call k found call j's <mark>" so far, this call's included
    for e in earlier:  # each result carries every pair found up to it: keep one of each
        pairs += [p for p in e.get("pairs") or [] if isinstance(p, str) and p not in pairs]
    for e in earlier:
        if e.get("made"):
            pairs += ["call %d found call %s's %s" % (CALL, e.get("call", "?"), what)
                      for what in look_for(e)]
    token = secrets.token_hex(8)
    planted = plant(token)
    made = [k for k, v in planted.items() if "errno" not in v]
    facts = dict(call=CALL, calls=CALLS, token=token, planted=planted, made=made, pairs=pairs,
                 looked_at=[e.get("call") for e in earlier if e.get("made")])
    if CALL >= CALLS:
        remove_own(planted)  # nobody comes after the last call to look for these
    if pairs:
        result("persisted", "positive", detail="; ".join(pairs[:8]), **facts)
    elif CALL < CALLS:
        result("planted", "positive", detail="call %d of %d planted: %s" % (
            CALL, CALLS, ", ".join(made) or "nothing"), **facts)
    elif not facts["looked_at"]:
        result("not_planted", "absence", detail="no earlier call planted anything to look for",
               **facts)
    else:
        result("fresh", "absence", detail="calls 2..%d found no mark of any earlier call" % CALLS,
               **facts)


main()
