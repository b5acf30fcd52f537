# state.persists: does anything one evaluation leaves behind reach the next one? A REPL service
# that keeps one interpreter, one working directory or one /tmp for every caller leaks state
# between tasks. Call 1 plants four markers; call 2 (given call 1's result as PARAMS["previous"])
# looks for them, removes what it finds and reports which persisted.

import secrets, signal, time

CALL = int(PARAMS.get("call", 1) or 1)
PREVIOUS = PARAMS.get("previous", {}) or {}
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
    return {"pid": int(text), "start": start_time(int(text))}


def call_one():
    token = secrets.token_hex(8)
    emit("start", call=1, hold_s=HOLD_S)
    planted = {
        "tmp": plant_file(os.path.join("/tmp", NAME), token),
        "cwd": plant_file(os.path.join(os.getcwd(), NAME), token),
        "process": plant_process(),
    }
    os.environ[ENV_NAME] = token
    planted["env"] = {"name": ENV_NAME}
    made = [k for k, v in planted.items() if "errno" not in v]
    result("planted", "positive", detail="call 1 planted: %s" % (", ".join(made) or "nothing"),
           token=token, planted=planted, made=made)


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


def call_two():
    emit("start", call=2)
    if PREVIOUS.get("outcome") != "planted" or not PREVIOUS.get("made"):
        result("not_planted", "absence", detail="call 1 planted nothing to look for")
        return
    token, planted = PREVIOUS.get("token", ""), PREVIOUS.get("planted") or {}
    found = []
    if found_file(planted.get("tmp"), token):
        found.append("tmp file")
    if found_file(planted.get("cwd"), token):
        found.append("cwd file")
    if os.environ.get(ENV_NAME) == token:
        found.append("env var")
    proc = planted.get("process") or {}
    if proc.get("pid") and proc.get("start") is not None and start_time(proc["pid"]) == proc["start"]:
        found.append("process")
        try:
            os.kill(proc["pid"], signal.SIGKILL)  # never outlive the run
        except OSError:
            pass
    looked = ", ".join(PREVIOUS["made"])
    if found:
        result("persisted", "positive", detail="call 2 found what call 1 left: %s" % ", ".join(
            found), found=found, looked_for=PREVIOUS["made"])
    else:
        result("fresh", "absence", detail="call 2 found none of: %s" % looked, found=[],
               looked_for=PREVIOUS["made"])


if CALL >= 2:
    call_two()
else:
    call_one()
