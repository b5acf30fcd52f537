"""OOM kills of the docker kubelet's containers, as the container runtime reports them (tests only).

Why not only `docker inspect` State.OOMKilled: docker 20.10 (this machine's daemon) copies the
flag into a container's exit status from its libcontainerd client, which sets it when containerd's
TaskOOM event was processed BEFORE the TaskExit event (libcontainerd/remote/client.go:
`ei.OOMKilled = ctr.getOOMKilled()` at each event). The two events come from different goroutines
of the runc shim (the memory cgroup's OOM notification; the reaper), so on a loaded machine the
TaskOOM can arrive second: the container ended 137 by a kernel OOM kill, docker still emits its
`oom` event, and State.OOMKilled stays false for good.

A real kubelet does not lose it: containerd's CRI plugin sets the container's Reason to
"OOMKilled" when TaskOOM arrives, whatever came first (its event handler updates the stored
status), and the kubelet reads that status on its next relist (PLEG, 1 s). The fake does the
same: it follows docker's `oom` events (the TaskOOM stream, raised by the kernel's memcg OOM
notification, never by the fake) and, for a container that ended with SIGKILL's 137, gives a
late event a bounded wait. Nothing is inferred from the exit code alone: a container SIGKILLed
for any other reason has no `oom` event and stays "Error" (test_fake_kube.py, OomEventsTest).
"""
import subprocess
import threading
import time

# How long a SIGKILLed container's status may wait for its TaskOOM (a kubelet relists every 1 s;
# a loaded daemon delivers the event later than that).
LATE_OOM_WAIT_S = 5.0


class OomEvents:
    """Container ids for which the runtime reported an OOM kill (a `docker events` follower)."""

    def __init__(self, argv):
        """argv prints one container id per line, one line per OOM event (see docker_argv)."""
        self.ids = set()
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        threading.Thread(target=self._read, daemon=True, name="oom-events").start()

    @staticmethod
    def docker_argv(label, since):
        """`docker events` for the `oom` action of containers carrying label, from `since`
        (Unix seconds: events before the follower connected are replayed, none is missed)."""
        return ["docker", "events", "--since", f"{since:.3f}", "--filter", "type=container",
                "--filter", "event=oom", "--filter", f"label={label}",
                "--format", "{{.Actor.ID}}"]

    def _read(self):
        for line in self.proc.stdout:
            cid = line.strip()
            if cid:
                with self.cond:
                    self.ids.add(cid)
                    self.cond.notify_all()

    def oom_killed(self, cid, wait_s=0.0):
        """True once an OOM event names cid; waits up to wait_s for one."""
        end = time.monotonic() + wait_s
        with self.cond:
            while cid not in self.ids:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
