"""Local processes that stand in for pod containers in the FAKE Kubernetes API server (tests only).

This is the `--kubelet process` model, kept for the API-behaviour self-tests; `--kubelet docker`
(kube_docker.py) runs real containers instead.

How a container "runs" here (what a kubelet + runtime would do, modelled with plain processes):
  - argv = container command + args, PATH=/usr/bin:/bin, HOME=/tmp, cwd a fresh directory,
    stdout and stderr to ONE log file (a real kubelet interleaves both streams too);
  - a new session per pod; when the fake runs as root, the pod's runAsUser/runAsGroup through
    `setpriv --reuid --regid --clear-groups` (+ --no-new-privs if allowPrivilegeEscalation false);
  - egress denied by a NetworkPolicy -> a fresh network namespace (`unshare --net` as root,
    `unshare --user --map-current-user --net` otherwise; see netns_wrapper): only a DOWN loopback,
    so nothing on the host (its loopback canaries included) is reachable and connect() fails
    with ENETUNREACH. /sys is NOT remounted (docs/traps.md, trap 9);
  - terminationMessagePath is NOT modelled (a process cannot have a file mounted at
    /dev/termination-log): the file does not exist in its view and no message is reported;
  - memory limit -> RSS of the process tree (VmRSS from /proc/<pid>/status, summed) sampled every
    50 ms and SIGKILL over the limit. This models the kubelet's cgroup OOM kill; it is coarser
    (a fast balloon can overshoot by one sampling period) and counts RSS, not page cache/tmpfs.
Process trees: every pod process carries FAKE_KUBE_POD=<instance>/<pod uid> in its environment
and the fake is a child subreaper, so children that setsid() and double-fork (docs/traps.md, trap 16)
are still found (by /proc walk of descendants, plus that marker) and killed.
"""
import ctypes
import os
import shutil
import signal
import subprocess
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
MARKER = "FAKE_KUBE_POD"


def become_subreaper():
    """Orphaned pod descendants reparent to this process instead of init (Linux prctl)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False


def read_stat(pid):
    """(ppid, state, starttime) of a pid from /proc/<pid>/stat, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = data[data.rfind(")") + 2:].split()
    return int(rest[1]), rest[0], int(rest[19])


def proc_table():
    """{pid: (ppid, state, starttime)} for every process visible in /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = read_stat(int(name))
            if st:
                table[int(name)] = st
    return table


def read_marker(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return None
    for item in env.split(b"\0"):
        if item.startswith(MARKER.encode() + b"="):
            return item.split(b"=", 1)[1].decode("ascii", "replace")
    return None


def descendants(table, roots):
    """Pids in `table` below (and including) any pid of `roots`."""
    children = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [p for p in roots if p in table]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.add(pid)
        todo.extend(children.get(pid, ()))
    return out


def rss_bytes(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def reap_orphans(popen_pids):
    """Reaps zombies reparented to us (we are a subreaper) that no Popen object owns."""
    me = os.getpid()
    for pid, (ppid, state, _) in proc_table().items():
        if ppid == me and state == "Z" and pid not in popen_pids:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def netns_wrapper(as_root):
    """argv prefix that runs a command in a fresh network namespace, or raises RuntimeError.

    root: `unshare --net`; non-root: `unshare --user --map-current-user --net` (the uid stays
    the same, no capabilities). bwrap is tried last but rejected in practice: it brings the new
    loopback UP, so a probe's connect to a host canary port answers ECONNREFUSED, which probes
    rightly count as REACHED. Verified by running it: the wrapped `python3` must get ENETUNREACH
    for 127.0.0.1 (only a down loopback).
    """
    candidates = []
    if shutil.which("unshare"):
        candidates.append(["unshare", "--net", "--"] if as_root else
                          ["unshare", "--user", "--map-current-user", "--net", "--"])
    if shutil.which("bwrap"):
        candidates.append(["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent",
                           "--"])
    check = ("import socket,errno\ns=socket.socket()\ntry:\n s.connect(('127.0.0.1',9))\n"
             "except OSError as e:\n print(errno.errorcode.get(e.errno))\n")
    errors = []
    for prefix in candidates:
        try:
            out = subprocess.run(prefix + ["/usr/bin/python3", "-c", check], capture_output=True,
                                 text=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired) as e:
            errors.append(f"{prefix[0]}: {e}")
            continue
        if out.returncode == 0 and out.stdout.strip() == "ENETUNREACH":
            return prefix
        errors.append(f"{prefix[0]}: rc={out.returncode} out={out.stdout.strip()!r} "
                      f"err={out.stderr.strip()[:200]!r}")
    raise RuntimeError("no way to make a network namespace: " + "; ".join(errors or ["no tool"]))


class PodProcess:
    """One running container: a Popen plus the set of pids known to belong to it.

    `known` accumulates (pid, starttime) pairs seen below the root, so a descendant that was seen
    once stays attributed after its parent exits.
    """

    def __init__(self, marker, argv, env, cwd, log_path):
        self.marker = marker
        self.log_path = log_path
        self.log = open(log_path, "wb")
        env = dict(env)
        env[MARKER] = marker
        self.popen = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                      stdout=self.log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        self.log.close()
        self.known = set()
        self.lock = threading.Lock()

    @property
    def pid(self):
        return self.popen.pid

    def tree(self, table=None, with_marker=False):
        """Live pids of this pod (descendants of the root + known + optionally marker matches)."""
        table = table if table is not None else proc_table()
        with self.lock:
            roots = {self.popen.pid} | {p for p, st in self.known
                                        if p in table and table[p][2] == st}
            pids = {p for p in descendants(table, roots) if table[p][1] != "Z"}
            if with_marker:
                for pid in table:
                    if pid not in pids and table[pid][1] != "Z" and read_marker(pid) == self.marker:
                        pids.add(pid)
            self.known |= {(p, table[p][2]) for p in pids}
            return pids

    def kill_tree(self):
        """SIGSTOP then SIGKILL every process of the pod until none is left (max ~2 s)."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except OSError:
            pass
        deadline = time.monotonic() + 2.0
        while True:
            pids = self.tree(with_marker=True)
            if not pids:
                break
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        try:
            self.popen.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
