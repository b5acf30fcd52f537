"""The FAKE API server's "kubelet": a pod's container runs as a local process (tests only).

It exists so that the C++ driver's Prepare -> Execute -> Cleanup runs real probe scripts against
the fake. It isolates NOTHING: no network namespace, no cgroup, no image (the host's binaries
run), no readOnlyRootFilesystem, capabilities or seccomp, no emptyDir, no memory or cpu limit;
NetworkPolicy is stored, never enforced. Real containers, limits and enforcement are the real
cluster's (ci/cluster, harness/testing/cluster).

How a container runs here:
  - argv = the first container's command + args; PATH=/usr/bin:/bin, HOME=/tmp, HOSTNAME = the pod
    name, KUBERNETES_SERVICE_HOST=127.0.0.1 and KUBERNETES_SERVICE_PORT(_HTTPS) = the fake's port,
    plus the container's env entries that have a plain `value`; cwd a fresh temp directory;
  - stdout and stderr to ONE log file (pods/log serves it; a real kubelet interleaves both streams
    too); terminationMessagePath is not modelled (no file, no message);
  - as root, runAsUser/runAsGroup through `setpriv --reuid --regid --clear-groups`
    (+ --no-new-privs when allowPrivilegeEscalation is false);
  - the process leads a session of its own; the pod's end, its deletion or the fake's shutdown
    SIGKILLs every process of that session, whatever process group it is in (GNU timeout makes
    its own). A process that leaves the session (setsid) is not followed, unlike a real kubelet's
    cgroup kill: the tests that use this fake run no such probe;
  - the scripted faults `oom=PROBE` / `evict=PROBE` end the pod OOMKilled (137) / Evicted 0.3 s
    after its start, or when its process ends if sooner; an evicted pod's log is emptied (the real
    kubelet removes the container and its log with it).
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from kube_store import now_rfc3339

SWEEP_S = 0.05
SCRIPTED_END_S = 0.3  # when a scripted oom/evict pod ends


def start(argv, env, cwd, log_path):
    """Popen of a container's process: own session, stdin /dev/null, stdout+stderr to the log."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def session_pids(sid):
    """Pids of the live (not zombie) processes of session `sid` (/proc/<pid>/stat)."""
    pids = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state, _, _, session = f.read().rsplit(b")", 1)[1].split()[:4]
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(session) == sid and state != b"Z":
            pids.append(int(name))
    return pids


def kill_session(popen):
    """SIGKILLs every process of a container's session (also the process groups its children
    made, as GNU timeout does) until none is left, and reaps the leader."""
    for _ in range(100):
        pids = session_pids(popen.pid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
    try:
        popen.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def running(st, started):
    """A pod status dict set to Running with its one container started at `started`."""
    ts = now_rfc3339()
    st.update(phase="Running", podIP="127.0.0.1", podIPs=[{"ip": "127.0.0.1"}])
    st["conditions"] = [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                  "PodScheduled")]
    st["containerStatuses"][0].update(ready=True, started=True,
                                      state={"running": {"startedAt": started}})


def terminated(st, pod, code, sig, reason, message=None, started=None):
    """A pod status dict set to Succeeded (code 0) or Failed, its container terminated so."""
    ts = now_rfc3339()
    st["phase"] = "Succeeded" if code == 0 else "Failed"
    term = {"exitCode": code, "reason": reason, "startedAt": started or ts, "finishedAt": ts,
            "containerID": f"fake://{pod['metadata']['uid']}"}
    if sig:
        term["signal"] = sig
    if message:
        term["message"] = message
    st["containerStatuses"][0].update(ready=False, started=False, state={"terminated": term})
    for cond in st.get("conditions", []):
        if cond["type"] in ("Ready", "ContainersReady"):
            cond.update(status="False", reason="PodCompleted", lastTransitionTime=ts)


class Kubelet:
    """Runs the pods the cluster schedules (Cluster.run_pod calls run()) as local processes."""

    def __init__(self, cluster, state_dir, as_root):
        self.cluster = cluster
        self.logs_dir = os.path.join(state_dir, "logs")
        self.as_root = as_root
        self.port = 0  # the API's port, for KUBERNETES_SERVICE_PORT (set once it listens)
        self.procs = {}  # pod uid -> Popen of its running container
        self.workdirs = {}  # pod uid -> (cwd, log path)

    def _argv_env(self, pod):
        spec = pod["spec"]
        c = spec["containers"][0]
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "HOSTNAME": pod["metadata"]["name"],
               "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(self.port),
               "KUBERNETES_SERVICE_PORT_HTTPS": str(self.port)}
        env.update({e["name"]: str(e["value"]) for e in c.get("env") or [] if "value" in e})
        psc, csc = spec.get("securityContext") or {}, c.get("securityContext") or {}
        uid = csc.get("runAsUser", psc.get("runAsUser"))
        gid = csc.get("runAsGroup", psc.get("runAsGroup", 0))
        prefix = []
        if self.as_root and uid is not None:
            prefix = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
            prefix += ["--no-new-privs"] if csc.get("allowPrivilegeEscalation") is False else []
            prefix.append("--")
        return prefix + list(c.get("command") or []) + list(c.get("args") or []), env, uid, gid

    def run(self, ns, name, uid, pod):
        """Runs a scheduled pod to its end and writes its status (the pod's own thread)."""
        cluster = self.cluster
        argv, env, run_uid, run_gid = self._argv_env(pod)
        cwd = tempfile.mkdtemp(prefix="fake-kube-pod-")
        fd, log_path = tempfile.mkstemp(prefix=f"{name}-", suffix=".log", dir=self.logs_dir)
        os.close(fd)
        if self.as_root and run_uid is not None:
            os.chown(cwd, run_uid, run_gid)
        with cluster.store.cond:
            self.workdirs[uid] = (cwd, log_path)
        try:
            proc = start(argv, env, cwd, log_path)
        except OSError as e:
            msg = f'failed to create containerd task: exec: "{argv[0]}": {e.strerror}'
            with cluster.store.cond:
                cluster.set_status_locked(ns, name, uid, lambda st, p: terminated(
                    st, p, 128, None, "StartError", msg))
            return
        started = now_rfc3339()
        with cluster.store.cond:
            if cluster.stopping.is_set() or cluster.set_status_locked(
                    ns, name, uid, lambda st, p: running(st, started)) is None:
                kill_session(proc)  # deleted while starting
                self.drop_workdir(uid)
                return
            self.procs[uid] = proc
        faults = cluster.settings["faults"]
        oom, evicted = cluster.probe_matches(pod, faults["oom"]), \
            cluster.probe_matches(pod, faults["evict"])
        t0 = time.monotonic()
        while proc.poll() is None:
            if (oom or evicted) and time.monotonic() - t0 > SCRIPTED_END_S:
                break
            time.sleep(SWEEP_S)
            with cluster.store.cond:
                if cluster.stopping.is_set() or self.procs.get(uid) is not proc:
                    return  # being deleted (the deleter kills it) or shutting down
        kill_session(proc)  # what the main process left behind dies with the container
        rc = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        sig = -rc if rc < 0 else None
        code = 128 + sig if sig else rc
        with cluster.store.cond:
            if self.procs.get(uid) is proc:
                del self.procs[uid]
            if oom:
                def end(st, p):
                    terminated(st, p, 137, 9, "OOMKilled", None, started)
            elif evicted:
                open(log_path, "wb").close()

                def end(st, p):
                    terminated(st, p, 137, 9, "Error", None, started)
                    st.update(reason="Evicted", message="The node was low on resource: memory. "
                              "Threshold quantity: 100Mi, available: 51200Ki. Container "
                              f"{p['spec']['containers'][0]['name']} was using 2Gi, request is 0, "
                              "has larger consumption of memory.")
            else:
                def end(st, p):
                    terminated(st, p, code, sig, "Completed" if code == 0 else "Error", None,
                               started)
            updated = cluster.set_status_locked(ns, name, uid, end)
            if updated is not None and evicted:
                cluster.event_locked(updated, "Warning", "Evicted", updated["status"]["message"],
                                     "kubelet")

    def log_path_locked(self, pod):
        """The container's log file, or None while the container has not started."""
        entry = self.workdirs.get(pod["metadata"]["uid"])
        statuses = pod.get("status", {}).get("containerStatuses") or []
        if entry is None or not statuses or "waiting" in statuses[0].get("state", {}):
            return None
        return entry[1]

    def stop_pod_locked(self, uid):
        """Kills the pod's processes; the store lock (held) is released meanwhile."""
        proc = self.procs.pop(uid, None)
        if proc is not None:
            self.cluster.store.cond.release()
            try:
                kill_session(proc)
            finally:
                self.cluster.store.cond.acquire()

    def drop_workdir(self, uid):
        cwd_log = self.workdirs.pop(uid, None)
        if cwd_log:
            shutil.rmtree(cwd_log[0], ignore_errors=True)
            try:
                os.unlink(cwd_log[1])
            except OSError:
                pass

    def shutdown(self):
        """Kills every pod's processes and removes the pods' directories."""
        with self.cluster.store.cond:
            procs = list(self.procs.values())
            self.procs.clear()
        for proc in procs:
            kill_session(proc)
        with self.cluster.store.cond:
            for uid in list(self.workdirs):
                self.drop_workdir(uid)
