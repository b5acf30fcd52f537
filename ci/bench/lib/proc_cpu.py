"""Which processes used the machine's CPU between two moments (ci/bench/cost): snapshots of every
/proc/<pid>/stat, then a difference grouped by process name.

A process alive at both snapshots (same pid and start time) counts its own utime+stime delta and,
separately, its cutime+cstime delta: the CPU of the children it reaped in between (a child's
figure includes what that child reaped in turn). A process born in between and still alive
counts all four. A process born and reaped in between appears only in its reaper's share, so a
daemon's short-lived helpers (containerd-shim, runc) show up under whoever reaped them (often
pid 1); one alive at the first snapshot and reaped before the second counts its whole life
there (snapshot right around the work to keep that small). Kernel threads (children of kthreadd, pid 2) are grouped as "kernel threads".
Seconds; the clock tick is os.sysconf("SC_CLK_TCK").

Usage: proc_cpu.py snap FILE | proc_cpu.py diff BEFORE AFTER [TOP]
"""
import collections
import json
import os
import sys

TICK = os.sysconf("SC_CLK_TCK")


def parse_stat(text):
    """(comm, ppid, starttime, own ticks, reaped-children ticks) of one /proc/<pid>/stat text."""
    head, rest = text.rsplit(")", 1)
    comm = head.split("(", 1)[1]
    f = rest.split()
    # rest starts at field 3 (state): ppid is field 4, utime..cstime 14..17, starttime 22.
    return comm, int(f[1]), int(f[19]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14])


def busy_ticks():
    """Busy ticks of all CPUs (/proc/stat "cpu": user nice system irq softirq; not idle, iowait
    or steal, the time a hypervisor gave our vCPU to someone else)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return v[0] + v[1] + v[2] + v[5] + v[6]


def snap():
    """{pid: [comm, ppid, starttime, own, children]} of every readable process now, and the
    machine's busy ticks under "busy"."""
    out = {"busy": busy_ticks()}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                out[name] = list(parse_stat(f.read()))
        except (OSError, ValueError, IndexError):
            continue  # gone while we looked
    return out


def group_of(pid, comm, ppid):
    if pid == "2" or ppid == 2:
        return "kernel threads"
    return comm


def diff(before, after):
    """{group: {"own": s, "reaped": s}} between two snapshots (dicts from snap())."""
    groups = collections.defaultdict(lambda: {"own": 0.0, "reaped": 0.0})
    for pid, row in after.items():
        if pid == "busy":
            continue
        comm, ppid, start, own, kids = row
        b = before.get(pid)
        if b is not None and b[2] == start:
            d_own, d_kids = own - b[3], kids - b[4]
        else:  # born in between
            d_own, d_kids = own, kids
        if d_own or d_kids:
            g = groups[group_of(pid, comm, ppid)]
            g["own"] += d_own / TICK
            g["reaped"] += d_kids / TICK
    return dict(groups)


def machine_busy_s(before, after):
    return (after["busy"] - before["busy"]) / TICK


def render(groups, top=12, busy_s=None):
    rows = sorted(groups.items(), key=lambda kv: -(kv[1]["own"] + kv[1]["reaped"]))
    lines = ["CPU seconds by process (own + what it reaped):"]
    for name, g in rows[:top]:
        lines.append(f"  {name:28s} {g['own'] + g['reaped']:8.2f}  "
                     f"(own {g['own']:.2f}, reaped {g['reaped']:.2f})")
    rest = sum(g["own"] + g["reaped"] for _, g in rows[top:])
    if rest:
        lines.append(f"  {'(the rest)':28s} {rest:8.2f}")
    total = sum(g["own"] + g["reaped"] for _, g in rows)
    lines.append(f"  {'total':28s} {total:8.2f}")
    if busy_s is not None:
        lines.append(f"  {'machine busy (/proc/stat)':28s} {busy_s:8.2f}  (not attributed "
                     f"{busy_s - total:.2f}: interrupts, processes no survivor reaped)")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "snap":
        with open(sys.argv[2], "w") as f:
            json.dump(snap(), f)
    else:
        before = json.load(open(sys.argv[2]))
        after = json.load(open(sys.argv[3]))
        print(render(diff(before, after), int(sys.argv[4]) if len(sys.argv) > 4 else 12,
                     machine_busy_s(before, after)))
