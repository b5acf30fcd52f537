#!/usr/bin/env python3
"""A run-code HTTP service used to test sandprobe's `http` driver.

THIS IS A TEST FIXTURE, NOT A PRODUCT. It exists so the end-to-end tests can point sandprobe at a
real service in several shapes: one that leaks (unsafe), one that contains (isolated), and four
realistic designs that each get one thing wrong (pool=N, soft-timeout, exec, shared), so that
sandprobe can be shown to catch them. Do not deploy it anywhere.

API (the driver's `preset: code-json`):
  POST /execute {"code": "<python>"} -> 200 {"stdout", "stderr", "exit_code"}
                                        (+ "error": "timed out" when its own timeout fires,
                                         + "truncated": true when it cut the output)
  GET  /healthz                      -> 200 {"ok": true, "mode": MODE}

Modes:
  unsafe    `python3 -u -c CODE` as a plain subprocess of the server, with the server's own
            environment and working directory: the pattern that leaks the server's credentials.
            On its timeout it kills that child only; the child's descendants live on (that is the
            bug this mode demonstrates). No output cap.
  isolated  each evaluation in a fresh container through the Docker Engine API on
            /var/run/docker.sock (stdlib http.client over AF_UNIX), with the HostConfig of
            manifests/docker/hardened.yaml (read from that file by the small parser below), user
            65534, image sandprobe-probe:local (never pulled), `timeout -k 2 T` inside, output cut
            at --output-cap bytes per stream, container force-removed after every evaluation.
  pool=N    a warm pool (N from 1 to 16): N scratch directories made at start (in a private temp
            directory removed at exit); evaluation k runs in a fresh bubblewrap sandbox
            (`setpriv` to uid 65534, then `bwrap --unshare-all --cap-drop ALL --ro-bind / /`,
            fresh /dev and /proc, --clearenv, PATH and HOME=/tmp set, `timeout -k 2 T` inside)
            whose /tmp, cwd and $HOME is scratch directory k mod N, reused round-robin and never
            wiped. Each evaluation has its own PID namespace, so no process survives it, but
            the (N+1)-th call finds the files the 1st left: sandprobe's state.persists FAILs
            (call N+1 finds call 1's marks). Output cut at --output-cap per stream. Measured
            too: bwrap, pid 1 of each sandbox, keeps the server's environment (--clearenv is for
            the program it execs), so cred.env-secrets finds the server's own secret there.
  soft-timeout  `sh -c 'python3 -u -c "$1"; exit $?' sh CODE` as a plain subprocess in its own
            session (the trailing `; exit $?` stops dash from exec'ing python in place of the
            shell, and keeps python's exit status, which a trailing `; :` would lose). At
            --timeout it SIGKILLs only the shell (not its group), answers with the output that
            came back so far, exit_code 124 and "timed out", and stops listening to the pipes:
            the python program keeps running after the answer. sandprobe's res.cpu-loop,
            res.memory-balloon and res.fork-bomb rows should FAIL ("still running after the
            sandbox reported it stopped"). Environment and cwd are the server's (as unsafe).
  exec      ONE long-lived container per fixture instance, created at start with the hardened
            HostConfig, User 65534:65534 and `sleep infinity`; every evaluation is a Docker exec
            into it (`timeout -k 2 T python3 -u -c CODE`, output read from the multiplexed exec
            stream and cut at --output-cap, ExitCode from the exec's inspect). The weakness: the
            exec runs with User "0:0" ("so the code can pip install"), so the evaluated process
            is root although the container's own first process is 65534: sandprobe's priv.uid
            must report uid 0 (the exec'd process's own facts, not the container's config) and
            FAIL. Evaluations also share the container's /tmp and PID namespace: state.persists
            and proc.sibling FAIL too (proc.host-pids sees the container's `sleep`, and a
            detached process outlives its call). The container is removed at shutdown.
  shared    a "session" sandbox joined by concurrent callers: an evaluation that arrives while
            none is in flight gets a fresh holder (`bwrap` with its own mount, PID, network, IPC,
            UTS and cgroup namespaces, a fresh scratch /tmp, running `sleep 3600`, its /proc
            remounted hidepid=2 so the holder's own root processes stay hidden); every
            evaluation runs inside the holder's namespaces through `nsenter`, then `setpriv` to
            uid 65534 with no capabilities and no-new-privs, an empty environment and
            `timeout -k 2 T`. When the last in-flight evaluation ends the holder is killed and
            its scratch directory removed, so sequential callers look fresh; but two callers in
            flight at the same moment share /tmp and one PID namespace (each sees and can signal
            the other's processes): state.persists (a concurrent pair) and proc.sibling FAIL.
            The holder is made without a user namespace (so that setpriv, run with the host
            root's capabilities, can drop them); nsenter gets --user only if one exists.

Faults for tests (after --fault-after normal evaluations, default 1 so sandprobe's preflight
passes): hang (never answer /execute), garbage (200 with a non-JSON body), huge (200 with a
64 MiB body and no Content-Length), die-after=N (answer N evaluations, then exit while handling
the next one, without an answer).

It binds 127.0.0.1 only (port 0 = any free port) and prints `READY http://127.0.0.1:<port>`.
On SIGTERM/SIGINT (and before dying on purpose) it kills every process it started, including
descendants that detached (it is their child subreaper), removes its containers (isolated,
exec) and its scratch directories (pool, shared). No sandbox it makes has a network.
Standard library only.
"""
import argparse
import ctypes
import http.client
import json
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
HARDENED = os.path.join(HERE, "..", "..", "..", "manifests", "docker", "hardened.yaml")
DOCKER_SOCK = "/var/run/docker.sock"
API = "/v1.41"
HUGE_BYTES = 64 << 20
PR_SET_CHILD_SUBREAPER = 36
NOBODY = 65534
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SHELL_GRACE_S = 0.5  # soft-timeout: how long to keep reading after the shell is dead
NAMESPACES = [("user", "--user"), ("mnt", "--mount"), ("pid", "--pid"), ("net", "--net"),
              ("ipc", "--ipc"), ("uts", "--uts"), ("cgroup", "--cgroup")]

STATE = {"served": 0, "lock": threading.Lock(), "stop": threading.Event(), "active": set(),
         "evaluations": 0,  # pool: the round-robin counter
         "scratch": None,  # pool, shared: the private temp directory of the scratch dirs
         "pool": [],  # pool: the N scratch directories
         "exec_cid": None,  # exec: the one container
         "shared_lock": threading.Lock(), "holder": None,  # shared: the in-flight sandbox
         "keeper": None}  # shared: the queue of the thread that starts holders (see on_keeper)


# ----------------------------------------------------------------------------- hardened set

def _split_top(text):
    """Splits on commas outside quotes and brackets."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    return [p for p in parts + [cur] if p.strip()]


def _flow_value(text):
    """A YAML scalar or flow collection of the simple kind hardened.yaml uses."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_flow_value(x) for x in _split_top(text[1:-1])]
    if text.startswith("{") and text.endswith("}"):
        out = {}
        for item in _split_top(text[1:-1]):
            k, _, v = item.partition(":")
            out[k.strip()] = _flow_value(v)
        return out
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def hardened_host_config(path=HARDENED):
    """The `hostConfig:` block of manifests/docker/hardened.yaml as a dict (a parser for the
    `Key: value` / flow-value lines that file uses, not for YAML in general)."""
    out, inside, indent = {}, False, None
    with open(path) as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line.strip() == "hostConfig:":
                inside = True
                continue
            if inside:
                this = len(line) - len(line.lstrip())
                indent = this if indent is None else indent
                if this < indent:
                    break
                key, _, value = line.strip().partition(":")
                out[key] = _flow_value(value)
    if not out.get("NetworkMode"):
        raise SystemExit("fixture: no hostConfig found in %s" % path)
    return out


# ----------------------------------------------------------------------------- Docker Engine API

class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def engine(method, path, body=None, timeout=30, limit=4 << 20):
    """One Engine API call -> (status, parsed JSON or raw bytes)."""
    conn = UnixConnection(ARGS.docker_sock, timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, API + path, body=None if body is None else json.dumps(body),
                     headers=headers)
        resp = conn.getresponse()
        data = resp.read(limit)
    finally:
        conn.close()
    try:
        return resp.status, json.loads(data) if data else None
    except ValueError:
        return resp.status, data


def read_frames(resp, cap, out, err):
    """Demultiplexes an Engine API attach/logs stream (8-byte frame headers: stream 1 stdout,
    2 stderr, then a big-endian size) into out and err, each cut at cap bytes; reading stops at
    the first cut. -> whether anything was cut."""
    while True:
        header = resp.read(8)
        if len(header) < 8:
            return False
        size = struct.unpack(">I", header[4:])[0]
        payload = resp.read(size)
        buf = err if header[0] == 2 else out
        room = cap - len(buf)
        buf += payload[:max(room, 0)]
        if len(payload) > room:
            return True


def read_logs(cid, cap):
    """stdout, stderr (each cut at cap bytes) and whether anything was cut, from the multiplexed
    log stream; reading stops at the cap."""
    conn = UnixConnection(ARGS.docker_sock, 30)
    out, err, cut = bytearray(), bytearray(), False
    try:
        conn.request("GET", API + "/containers/%s/logs?stdout=1&stderr=1" % cid)
        resp = conn.getresponse()
        cut = read_frames(resp, cap, out, err)
    finally:
        conn.close()
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), cut


def remove_container(cid):
    try:
        engine("DELETE", "/containers/%s?force=1" % cid, timeout=30)
    except OSError:
        pass


def run_isolated(code):
    name = "sandprobe-fixture-%s-%s" % (INSTANCE, secrets.token_hex(3))
    body = {"Image": ARGS.image, "User": "65534:65534",
            "Cmd": ["timeout", "-k", "2", str(ARGS.timeout), "python3", "-u", "-c", code],
            "Labels": {"sandprobe.fixture": INSTANCE}, "HostConfig": HOST_CONFIG}
    status, created = engine("POST", "/containers/create?name=" + name, body)
    if status != 201:
        return {"error": "container create failed: HTTP %d %s" % (status, str(created)[:200])}
    cid = created["Id"]
    with STATE["lock"]:
        STATE["active"].add(cid)
    try:
        status, _ = engine("POST", "/containers/%s/start" % cid)
        if status not in (204, 304):
            return {"error": "container start failed: HTTP %d" % status}
        waited = True
        try:
            engine("POST", "/containers/%s/wait" % cid, timeout=ARGS.timeout + 10)
        except OSError:  # socket timeout: it outlived timeout -k 2 by far
            waited = False
        stdout, stderr, cut = read_logs(cid, ARGS.output_cap)
        _, info = engine("GET", "/containers/%s/json" % cid)
        code_ = (info or {}).get("State", {}).get("ExitCode", -1) if waited else -9
        reply = {"stdout": stdout, "stderr": stderr, "exit_code": code_}
        if not waited or code_ in (124, 137) and not info["State"].get("OOMKilled"):
            reply["error"] = "timed out"
        if cut:
            reply["truncated"] = True
        return reply
    finally:
        remove_container(cid)
        with STATE["lock"]:
            STATE["active"].discard(cid)


# ----------------------------------------------------------------------------- unsafe mode

def run_unsafe(code):
    """python3 -u -c CODE as a plain child with the server's env and cwd; no output cap."""
    proc = subprocess.Popen([sys.executable, "-u", "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    with STATE["lock"]:
        STATE["active"].add(proc.pid)
    chunks = {"out": [], "err": []}

    def pump(stream, key):
        for block in iter(lambda: stream.read1(1 << 16), b""):
            chunks[key].append(block)

    readers = [threading.Thread(target=pump, args=(proc.stdout, "out"), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, "err"), daemon=True)]
    for r in readers:
        r.start()
    timed_out = False
    try:
        proc.wait(timeout=ARGS.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()  # the child only: its descendants live on (the bug this mode shows)
        proc.wait()
    for r in readers:
        r.join(timeout=1)  # a descendant may still hold the pipes: do not wait for it
    with STATE["lock"]:
        STATE["active"].discard(proc.pid)
    reply = {"stdout": b"".join(chunks["out"]).decode("utf-8", "replace"),
             "stderr": b"".join(chunks["err"]).decode("utf-8", "replace"),
             "exit_code": proc.returncode}
    if timed_out:
        reply["error"] = "timed out"
    return reply


# ----------------------------------------------------------------------------- shared plumbing

def spawn(argv, **kw):
    """Popen with stdin closed and both output pipes, its pid marked active under the lock the
    orphan reaper holds, so the reaper never collects it before Popen.wait does."""
    with STATE["lock"]:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, **kw)
        STATE["active"].add(proc.pid)
    return proc


def forget(proc):
    with STATE["lock"]:
        STATE["active"].discard(proc.pid)


class Output:
    """Reads a child's stdout and stderr on two threads, keeping at most cap bytes of each and
    draining the rest (the child is never blocked on a full pipe). take() stops keeping: what
    arrives later (from a survivor that still holds the pipes) is read and dropped."""

    def __init__(self, proc, cap):
        self.cap, self.cut, self.keep, self.abandoned = cap, False, True, False
        self.bufs = (bytearray(), bytearray())
        self.lock = threading.Lock()
        self.readers = [threading.Thread(target=self._pump, args=(s, b), daemon=True)
                        for s, b in ((proc.stdout, self.bufs[0]), (proc.stderr, self.bufs[1]))]
        for r in self.readers:
            r.start()

    def _pump(self, stream, buf):
        try:
            for block in iter(lambda: stream.read1(1 << 16), b""):
                with self.lock:
                    if self.abandoned:  # stop reading and close: the writer gets EPIPE
                        break
                    if not self.keep:
                        continue
                    room = self.cap - len(buf)
                    if len(block) > room:
                        self.cut = True
                    buf += block[:max(room, 0)]
        except (OSError, ValueError):
            pass
        finally:
            if self.abandoned:
                stream.close()

    def abandon(self):
        """Stop listening: each reader closes its pipe at the next block that arrives, so a
        survivor that writes again gets EPIPE (what a service does that drops the pipes with the
        answer, e.g. subprocess.run(timeout=...) in a handler that returns)."""
        with self.lock:
            self.abandoned = True

    def take(self, grace):
        """Waits up to grace seconds for EOF on both, then returns (stdout, stderr, cut)."""
        deadline = time.monotonic() + grace
        for r in self.readers:
            r.join(timeout=max(0, deadline - time.monotonic()))
        with self.lock:
            self.keep = False
            return (self.bufs[0].decode("utf-8", "replace"),
                    self.bufs[1].decode("utf-8", "replace"), self.cut)


def reply_of(stdout, stderr, exit_code, timed_out, cut):
    reply = {"stdout": stdout, "stderr": stderr, "exit_code": exit_code}
    if timed_out:
        reply["error"] = "timed out"
    if cut:
        reply["truncated"] = True
    return reply


def timed_out_by(code, elapsed):
    """`timeout -k 2 T` ended it: 124 (TERM worked) or 137 after T (KILL 2 s later). A 137
    before T is someone else's SIGKILL (the OOM killer, the code itself)."""
    return code == 124 or (code == 137 and elapsed >= ARGS.timeout)


def run_sandboxed(argv):
    """argv (a sandbox around `timeout -k 2 T ...`) with output cut at --output-cap; a backstop
    SIGKILLs the sandbox's outermost process T + 5 s in (the inner timeout should have ended it
    by then)."""
    began = time.monotonic()
    proc = spawn(argv, start_new_session=True)
    out = Output(proc, ARGS.output_cap)
    backstop = False
    try:
        proc.wait(timeout=ARGS.timeout + 5)
    except subprocess.TimeoutExpired:
        backstop = True
        proc.kill()
        proc.wait()
    forget(proc)
    stdout, stderr, cut = out.take(grace=1)
    code = -9 if backstop else proc.returncode
    return reply_of(stdout, stderr, code, backstop or timed_out_by(code, time.monotonic() - began),
                    cut)


def timeout_argv(code):
    return ["timeout", "-k", "2", str(ARGS.timeout), "python3", "-u", "-c", code]


def make_scratch(parent):
    """A scratch directory that uid 65534 (the sandboxes' user) owns."""
    path = tempfile.mkdtemp(prefix="scratch-", dir=parent)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o755)
    return path


# ----------------------------------------------------------------------------- pool=N mode

def setup_pool(n):
    for _ in range(n):
        STATE["pool"].append(make_scratch(STATE["scratch"]))


def run_pool(code):
    """A fresh bubblewrap sandbox as uid 65534 whose /tmp (its cwd and $HOME) is scratch
    directory k mod N: a warm pool that never wipes its directories (the weakness)."""
    with STATE["lock"]:
        k = STATE["evaluations"]
        STATE["evaluations"] += 1
    scratch = STATE["pool"][k % len(STATE["pool"])]
    argv = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
            "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--bind", scratch, "/tmp", "--chdir", "/tmp",
            "--clearenv", "--setenv", "PATH", SANDBOX_PATH, "--setenv", "HOME", "/tmp",
            "--"] + timeout_argv(code)
    return run_sandboxed(argv)


# ----------------------------------------------------------------------------- soft-timeout mode

def run_soft_timeout(code):
    """sh -c 'python3 -u -c "$1"; exit $?' in its own session (python is not the shell's last
    command, so dash forks it instead of exec'ing it in place; `exit $?` keeps its status); at
    the timeout only the shell is killed and the answer goes out with what came back so far:
    python lives on (the bug)."""
    proc = spawn(["sh", "-c", 'python3 -u -c "$1"; exit $?', "sh", code],
                 start_new_session=True)
    out = Output(proc, ARGS.output_cap)
    timed_out = False
    try:
        proc.wait(timeout=ARGS.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.kill(proc.pid, signal.SIGKILL)  # the shell only, not its group
        proc.wait()
    forget(proc)
    # Python still holds the pipes after a timeout: never wait for their EOF, only a grace.
    stdout, stderr, cut = out.take(grace=SHELL_GRACE_S if timed_out else 1)
    out.abandon()  # the answer goes out; nobody reads what python writes after it
    return reply_of(stdout, stderr, 124 if timed_out else proc.returncode, timed_out, cut)


# ----------------------------------------------------------------------------- exec mode

def setup_exec():
    """The one long-lived container every evaluation is exec'd into."""
    name = "sandprobe-fixture-%s-exec" % INSTANCE
    body = {"Image": ARGS.image, "User": "%d:%d" % (NOBODY, NOBODY),
            "Cmd": ["sleep", "infinity"],
            "Labels": {"sandprobe.fixture": INSTANCE}, "HostConfig": HOST_CONFIG}
    try:
        status, created = engine("POST", "/containers/create?name=" + name, body)
        if status != 201:
            raise SystemExit("fixture: container create failed: HTTP %d %s" % (
                status, str(created)[:200]))
        STATE["exec_cid"] = created["Id"]
        status, _ = engine("POST", "/containers/%s/start" % created["Id"])
        if status not in (204, 304):
            raise SystemExit("fixture: container start failed: HTTP %d" % status)
    except OSError as exc:
        raise SystemExit("fixture: Docker Engine API on %s: %s" % (ARGS.docker_sock, exc))


def read_exec_stream(exec_id, cap, timeout):
    """Starts the exec attached and reads its multiplexed stream (the logs endpoint's 8-byte
    frames) -> stdout, stderr (each cut at cap), cut, and whether the stream ended in time."""
    conn = UnixConnection(ARGS.docker_sock, timeout)
    out, err, cut, ended = bytearray(), bytearray(), False, True
    try:
        conn.request("POST", API + "/exec/%s/start" % exec_id,
                     body=json.dumps({"Detach": False, "Tty": False}),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise OSError("exec start failed: HTTP %d %r" % (resp.status, resp.read(200)))
        cut = read_frames(resp, cap, out, err)
    except socket.timeout:
        ended = False
    finally:
        conn.close()
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), cut, ended


def run_exec(code):
    """`timeout -k 2 T python3 -u -c CODE` exec'd into the one container AS ROOT (User "0:0",
    the weakness: the container's own process is 65534, the evaluated one is not)."""
    cid = STATE["exec_cid"]
    status, created = engine("POST", "/containers/%s/exec" % cid, {
        "Cmd": timeout_argv(code), "AttachStdout": True, "AttachStderr": True, "User": "0:0"})
    if status != 201:
        return {"error": "exec create failed: HTTP %d %s" % (status, str(created)[:200])}
    exec_id = created["Id"]
    began = time.monotonic()
    stdout, stderr, cut, ended = read_exec_stream(exec_id, ARGS.output_cap, ARGS.timeout + 10)
    info = {}
    for _ in range(ARGS.timeout * 10 + 50):  # after a cut the process may still be running
        _, info = engine("GET", "/exec/%s/json" % exec_id)
        info = info if isinstance(info, dict) else {}
        if not info.get("Running"):
            break
        time.sleep(0.1)
    if info.get("Running") and info.get("Pid"):
        try:  # it outlived `timeout -k 2 T` by far: end it from the host
            os.kill(info["Pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
        ended = False
    code_ = info.get("ExitCode")
    code_ = -9 if not ended or code_ is None else code_
    return reply_of(stdout, stderr, code_,
                    not ended or timed_out_by(code_, time.monotonic() - began), cut)


# ----------------------------------------------------------------------------- shared mode

def _holder_target(bwrap_pid, deadline):
    """The host pid of the holder's sandboxed `sleep`: bwrap -> bwrap (init of the new PID
    namespace) -> sleep. Waits until sleep has been exec'd (its namespaces are final then)."""
    while time.monotonic() < deadline:
        for init, _ in children_of(bwrap_pid):
            for pid, _ in children_of(init):
                try:
                    with open("/proc/%d/comm" % pid) as f:
                        if f.read().strip() == "sleep":
                            return init, pid
                except OSError:
                    pass
        time.sleep(0.01)
    return None, None


def _keeper_loop(jobs):
    while True:
        fn, box, done = jobs.get()
        try:
            box["result"] = fn()
        except BaseException as exc:  # handed back to the caller, raised there
            box["error"] = exc
        finally:
            done.set()


def on_keeper(fn):
    """Runs fn() on one thread that lives as long as the fixture and returns (or raises) what it
    did. The holder's bwrap must be forked there: --die-with-parent is PR_SET_PDEATHSIG, whose
    "parent" is the THREAD that forked the child, not the process. Forked on the request thread
    of the evaluation that found no holder, the holder (and every evaluation that joined it)
    was SIGKILLed as soon as that one answered and its thread ended, while the others were still
    in flight. On the keeper it dies with the fixture only (a SIGKILLed fixture leaves nothing)."""
    with STATE["lock"]:
        if STATE["keeper"] is None:
            STATE["keeper"] = queue.Queue()
            threading.Thread(target=_keeper_loop, args=(STATE["keeper"],), name="keeper",
                             daemon=True).start()
        jobs = STATE["keeper"]
    box, done = {}, threading.Event()
    jobs.put((fn, box, done))
    done.wait()
    if "error" in box:
        raise box["error"]
    return box["result"]


def start_holder():
    """A fresh bwrap running `sleep 3600` with its own mount, PID, network, IPC, UTS and cgroup
    namespaces and a fresh scratch /tmp. No user namespace on purpose: evaluations join with
    nsenter as the host's root and setpriv drops to 65534 with every capability gone (nsenter
    --user would hand them a full bounding set that no one left could drop)."""
    scratch = make_scratch(STATE["scratch"])
    argv = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--bind", scratch, "/tmp", "--chdir", "/tmp",
            "--clearenv", "--setenv", "PATH", SANDBOX_PATH, "--setenv", "HOME", "/tmp",
            "--", "sleep", "3600"]

    def fork():  # on the keeper thread: see on_keeper
        with STATE["lock"]:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            STATE["active"].add(proc.pid)
        return proc

    try:
        proc = on_keeper(fork)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    holder = {"proc": proc, "scratch": scratch, "inflight": 0}
    holder["init"], holder["target"] = _holder_target(proc.pid, time.monotonic() + 10)
    if holder["target"] is None:
        stop_holder(holder)
        raise OSError("the shared sandbox did not start")
    flags = []
    for ns, flag in NAMESPACES:
        try:
            if os.readlink("/proc/%d/ns/%s" % (holder["target"], ns)) != os.readlink(
                    "/proc/self/ns/%s" % ns):
                flags.append(flag)
        except OSError:
            pass
    holder["nsenter"] = flags
    # hidepid=2 on the holder's own /proc (a fresh procfs instance: the host's is untouched):
    # its root-owned bwrap and sleep are hidden from the evaluations (all uid 65534), which
    # still see each other's processes: a lone evaluation sees only its own tree.
    try:
        hidden = subprocess.run(["nsenter", "--target", str(holder["target"]), "--mount", "--",
                                 "mount", "-o", "remount,hidepid=2", "/proc"],
                                stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        hidden = exc
    if getattr(hidden, "returncode", 1) != 0:
        stop_holder(holder)
        raise OSError("the shared sandbox's /proc could not be remounted: %s" % (
            getattr(hidden, "stderr", None) or hidden))
    return holder


def stop_holder(holder):
    """SIGKILL to the PID namespace's init ends every process in it; then bwrap, then the
    scratch directory."""
    for pid in (holder.get("init"), holder["proc"].pid):
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    holder["proc"].wait()
    forget(holder["proc"])
    shutil.rmtree(holder["scratch"], ignore_errors=True)


def run_shared(code):
    """Joins the in-flight sandbox (or starts one) and runs the evaluation inside it; the last
    evaluation out ends it."""
    with STATE["shared_lock"]:
        holder = STATE["holder"]
        if holder is None:
            holder = STATE["holder"] = start_holder()
        holder["inflight"] += 1
    try:
        argv = (["nsenter", "--target", str(holder["target"])] + holder["nsenter"] +
                ["--root", "--wd", "--"])
        if "--user" in holder["nsenter"]:  # not expected (see start_holder): no root in there
            argv[-1:-1] = ["--setuid", str(NOBODY), "--setgid", str(NOBODY)]
            argv += ["setpriv", "--no-new-privs", "--"]
        else:
            argv += ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
                     "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]
        argv += ["env", "-i", "PATH=" + SANDBOX_PATH, "HOME=/tmp"] + timeout_argv(code)
        return run_sandboxed(argv)
    finally:
        with STATE["shared_lock"]:
            holder["inflight"] -= 1
            last = holder["inflight"] == 0
            if last:
                STATE["holder"] = None
        if last:
            stop_holder(holder)


RUN = {"unsafe": run_unsafe, "isolated": run_isolated, "pool": run_pool,
       "soft-timeout": run_soft_timeout, "exec": run_exec, "shared": run_shared}


# ----------------------------------------------------------------------------- processes

def children_of(pid):
    kids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append((int(name), fields[0]))
    return kids


def reap_orphans():
    """Collect zombies of re-parented descendants (never the unsafe children being waited for)."""
    while not STATE["stop"].wait(0.5):
        with STATE["lock"]:  # held throughout: spawn() marks a child active under it
            for pid, state in children_of(os.getpid()):
                if state == b"Z" and pid not in STATE["active"]:
                    try:
                        os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        pass


def kill_everything():
    """SIGKILL every descendant (they are all our children once their parents die: we are their
    subreaper) and remove this instance's containers."""
    for _ in range(50):
        kids = children_of(os.getpid())
        if not kids:
            break
        for pid, _ in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid, _ in kids:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.05)
    if ARGS.mode in ("isolated", "exec"):
        flt = json.dumps({"label": ["sandprobe.fixture=%s" % INSTANCE]})
        try:
            _, found = engine("GET", "/containers/json?all=1&filters=" + urllib.parse.quote(flt))
            for c in found or []:
                remove_container(c["Id"])
        except OSError:
            pass
    if STATE["scratch"]:  # pool, shared: every scratch directory, after every process is gone
        shutil.rmtree(STATE["scratch"], ignore_errors=True)


# ----------------------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the tests read stdout for READY only
        pass

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/healthz":
            self.send_json(200, {"ok": True, "mode": ARGS.mode})
        else:
            self.send_json(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/execute":
            self.send_json(404, {"error": "not found"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > (1 << 20):
            self.send_json(413, {"error": "request too large"})
            return
        try:
            code = json.loads(self.rfile.read(length))["code"]
            assert isinstance(code, str)
        except (ValueError, KeyError, TypeError, AssertionError):
            self.send_json(400, {"error": "expected {\"code\": \"...\"}"})
            return
        with STATE["lock"]:
            STATE["served"] += 1
            n = STATE["served"]
        fault, after = ARGS.fault, ARGS.fault_after
        if fault and fault.startswith("die-after="):
            if n > int(fault.split("=", 1)[1]):
                kill_everything()
                os._exit(3)  # no answer: the client sees the connection close
        elif fault and n > after:
            if fault == "hang":
                STATE["stop"].wait(600)
                return
            if fault == "garbage":
                data = b"<html>502 Bad Gateway? no: 200 and not JSON {\"stdout\":"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if fault == "huge":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")  # no Content-Length: read until close
                self.end_headers()
                self.close_connection = True
                try:
                    self.wfile.write(b'{"stdout": "')
                    block = b"x" * (1 << 20)
                    for _ in range(HUGE_BYTES >> 20):
                        self.wfile.write(block)
                    self.wfile.write(b'", "stderr": "", "exit_code": 0}')
                except OSError:
                    pass  # the client stopped reading (its deadline, or Ctrl-C)
                return
        try:
            reply = RUN[ARGS.mode.partition("=")[0]](code)
        except OSError as exc:
            self.send_json(500, {"error": "evaluation failed: %s" % exc})
            return
        self.send_json(200, reply)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a client that hung up is no news


def mode_arg(text):
    if text in ("unsafe", "isolated", "soft-timeout", "exec", "shared"):
        return text
    m = re.fullmatch(r"pool=(\d+)", text)
    if m and 1 <= int(m.group(1)) <= 16:
        return "pool=%d" % int(m.group(1))
    raise argparse.ArgumentTypeError(
        "expected unsafe, isolated, pool=N (N from 1 to 16), soft-timeout, exec or shared")


def main():
    global ARGS, INSTANCE, HOST_CONFIG
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", type=mode_arg, required=True,
                    help="unsafe | isolated | pool=N (1-16) | soft-timeout | exec | shared")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=5, help="seconds per evaluation")
    ap.add_argument("--output-cap", type=int, default=1 << 20,
                    help="bytes kept per stream (every mode but unsafe)")
    ap.add_argument("--fault", default="",
                    help="hang | garbage | huge | die-after=N")
    ap.add_argument("--fault-after", type=int, default=1,
                    help="normal evaluations before hang/garbage/huge start")
    ap.add_argument("--image", default="sandprobe-probe:local")
    ap.add_argument("--docker-sock", default=DOCKER_SOCK)
    ARGS = ap.parse_args()
    if ARGS.fault and ARGS.fault not in ("hang", "garbage", "huge") and not re.fullmatch(
            r"die-after=\d+", ARGS.fault):
        ap.error("--fault: expected hang, garbage, huge or die-after=N")
    INSTANCE = "%d-%s" % (os.getpid(), secrets.token_hex(3))
    HOST_CONFIG = hardened_host_config() if ARGS.mode in ("isolated", "exec") else None
    try:  # adopt detached descendants, so that stopping the fixture can kill them all
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    stop = threading.Event()  # before any setup: a SIGTERM during it still cleans up
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if ARGS.mode.startswith("pool=") or ARGS.mode == "shared":
        # In $TMPDIR, which uid 65534 must be able to traverse: the pool's sandboxes bind from it.
        STATE["scratch"] = tempfile.mkdtemp(prefix="sandprobe-fixture-%s-" % INSTANCE)
        os.chmod(STATE["scratch"], 0o711)
    try:
        if ARGS.mode.startswith("pool="):
            setup_pool(int(ARGS.mode.split("=", 1)[1]))
        elif ARGS.mode == "exec":
            setup_exec()
        server = Server(("127.0.0.1", ARGS.port), Handler)
    except BaseException:
        kill_everything()
        raise
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Thread(target=reap_orphans, daemon=True).start()
    print("READY http://127.0.0.1:%d" % server.server_address[1], flush=True)
    while not stop.wait(0.5):
        pass
    STATE["stop"].set()
    server.shutdown()
    kill_everything()
    server.server_close()


if __name__ == "__main__":
    main()
