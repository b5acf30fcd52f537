"""Where a run's CPU and time went, from its report.json (`cost`, every observation's `timeline`
and `probe_cpu`; docs/design.md, "Reports") and, for containers, the CPU their cgroups used
during the run, which the caller measures (ci/bench/cost).

Usage: cost_split.py REPORT_JSON TITLE [CONTAINER_CPU_S [CLIENT_ARM,...]]

Figures (seconds):
  wall            the run's own wall time from its first invocation to its last (cost.wall_s)
  longest probe   the longest invocation's duration_s
  machine CPU     every process on the machine during that time (/proc/stat, cost.machine_cpu_s)
  probe CPU       what the sandboxed programs used: the sum of probe_cpu (a command's own
                  cgroup where the machine allows one, else only what the reaper's wait4 reaped
                  of its tree, a lower bound: its source starts "at least") plus the containers'
                  cgroup CPU the caller passes
  harness CPU     sandprobe's own threads (cost.harness_cpu_s)
  overhead        machine - probe - harness: daemons, runtimes, the kernel, anything else
  floor           machine CPU / CPUs: the shortest wall the same work could take
"""
import collections
import json


def split(report, container_cpu_s=None, client_arms=()):
    """{figure: value} of one report (a dict). container_cpu_s: cgroup CPU of the containers;
    client_arms: arms whose command is a client of a daemon (`docker run`): their rusage is the
    client's, not the probe's (the probe's is in container_cpu_s), so it counts as overhead."""
    cost = report.get("cost")
    if not cost:
        raise ValueError("report.json has no `cost` (written by a run of this sandprobe)")
    obs = report["observations"]
    known = [o for o in obs if "probe_cpu" in o["evidence"] and o["arm"] not in client_arms]
    probe = sum(o["evidence"]["probe_cpu"]["seconds"] for o in known)
    if container_cpu_s is not None:
        probe += container_cpu_s
    machine = cost["machine_cpu_s"]
    floor = machine / max(1, cost["cpus"])
    out = {
        "invocations": len(obs),
        "wall_s": cost["wall_s"],
        "longest_probe_s": max((o["evidence"]["duration_s"] for o in obs), default=0.0),
        "machine_cpu_s": machine,
        "probe_cpu_s": probe,
        "probe_cpu_counted": counted(known, len(obs))
                             + ("" if container_cpu_s is None else ", containers by cgroup"),
        "harness_cpu_s": cost["harness_cpu_s"],
        "overhead_cpu_s": machine - probe - cost["harness_cpu_s"],
        "floor_s": floor,
        "wall_over_floor": cost["wall_s"] / floor if floor > 0 else float("nan"),
        "machine_over_probe": machine / probe if probe > 0 else float("nan"),
    }
    n = max(1, len(obs))
    out["harness_cpu_per_invocation_s"] = cost["harness_cpu_s"] / n
    out["overhead_cpu_per_invocation_s"] = out["overhead_cpu_s"] / n
    return out


def counted(known, total):
    """How many invocations carry a probe CPU figure, and how many of those are lower bounds."""
    bounds = sum(1 for o in known if o["evidence"]["probe_cpu"]["source"].startswith("at least"))
    return (f"{len(known)} of {total} invocations ({len(known) - bounds} by their own cgroup, "
            f"{bounds} at least, by rusage)")


def phases_by_arm(report):
    """{arm: {phase: (count, mean seconds)}} over every observation's timeline."""
    sums = collections.defaultdict(lambda: collections.defaultdict(list))
    for o in report["observations"]:
        for p in o["evidence"].get("timeline", []):
            sums[o["arm"]][p["phase"]].append(p["end_s"] - p["start_s"])
    return {arm: {ph: (len(v), sum(v) / len(v)) for ph, v in phases.items()}
            for arm, phases in sums.items()}


def render(title, figures, phases):
    """The printed section: figures, then the mean phase times by arm."""
    lines = [f"## {title}"]
    order = ["invocations", "wall_s", "longest_probe_s", "machine_cpu_s", "probe_cpu_s",
             "probe_cpu_counted", "harness_cpu_s", "harness_cpu_per_invocation_s",
             "overhead_cpu_s", "overhead_cpu_per_invocation_s", "floor_s", "wall_over_floor",
             "machine_over_probe"]
    for k in order:
        v = figures[k]
        lines.append(f"{k + ':':34s} {v:.3f}" if isinstance(v, float) else f"{k + ':':34s} {v}")
    lines.append("mean seconds per phase, by arm (count):")
    for arm in sorted(phases):
        parts = ", ".join(f"{ph} {mean:.3f} ({count})"
                          for ph, (count, mean) in sorted(phases[arm].items()))
        lines.append(f"  {arm}: {parts}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    report = json.load(open(sys.argv[1]))
    container = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "" else None
    clients = sys.argv[4].split(",") if len(sys.argv) > 4 else ()
    print(render(sys.argv[2], split(report, container, clients), phases_by_arm(report)))
