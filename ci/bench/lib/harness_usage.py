"""Peak RSS and CPU of one `sandprobe run`: the harness process itself, apart from its sandboxes
(ci/bench/reliability.d/resources; harness/testing/e2e/test_harness_bounds.py).

Counted: `harness_hwm_kib` is the harness's own VmHWM (/proc/<pid>/status, peak resident set of
its address space; read every 20 ms while it runs, the last read before it exits: a peak in its
last 20 ms is missed); `harness_cpu_s` its own user+system time (/proc/<pid>/stat utime+stime at
that read); `children_cpu_s` what the processes it waited for (probes, bwrap, python3; not docker
containers, which dockerd runs) used, from wait4() minus the own share; `tree_maxrss_kib` the
largest peak RSS of the harness or any child it waited for (wait4's ru_maxrss), an upper bound.
"""
import os
import subprocess
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def _read(pid):
    """(VmHWM KiB, own cpu s) of a live pid, or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as f:
            hwm = next((int(l.split()[1]) for l in f if l.startswith("VmHWM:")), None)
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, StopIteration, ValueError):
        return None
    if hwm is None:  # a zombie: its memory is gone
        return None
    return hwm, (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def measure(argv, cwd=None, env=None, timeout=3600, interval=0.02, stderr_path=None):
    """Runs argv (sandprobe ...), stdout discarded, stderr to stderr_path (or discarded);
    returns a dict of figures."""
    t0 = time.monotonic()
    with open(os.devnull, "wb") as null, open(stderr_path or os.devnull, "wb") as err:
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=null,
                             stderr=err)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    last = (0, 0.0)
    try:
        while True:
            got = _read(p.pid)
            if got is not None:
                last = got
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(interval)
    except BaseException:
        p.kill()
        os.wait4(p.pid, 0)
        raise
    finally:
        timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    total_cpu = usage.ru_utime + usage.ru_stime
    return {"exit_code": p.returncode, "wall_s": round(time.monotonic() - t0, 2),
            "harness_hwm_kib": last[0], "harness_cpu_s": round(last[1], 2),
            "children_cpu_s": round(max(0.0, total_cpu - last[1]), 2),
            "tree_maxrss_kib": usage.ru_maxrss}
