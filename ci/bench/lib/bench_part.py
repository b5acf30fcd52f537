"""What the parts of ci/bench/reliability share: the printed section and its JSON, the
CPU hog, the docker setup, and Ctrl-C/SIGTERM turned into an exception so every part's
`finally` removes what it made."""
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# The binary ci/build made and this tree; SANDPROBE_BIN and SANDPROBE_HOME name others (as for
# the e2e tests: a binary and the tree of probes, suites and manifests it was built with).
SANDPROBE = os.environ.get("SANDPROBE_BIN") or os.path.join(ROOT, "build", "bin", "sandprobe")
HOME = os.path.abspath(os.environ.get("SANDPROBE_HOME") or ROOT)


class SetupError(Exception):
    """The part could not arrange what it needs (exit 2)."""


class Section:
    """`## <part>` then `name: value` lines; the same figures to $RELIABILITY_OUT/<part>.json."""

    def __init__(self, part):
        self.part, self.figures, self.t0 = part, {}, time.monotonic()

    def add(self, name, value):
        self.figures[name] = value

    def finish(self, goal_met):
        self.figures["elapsed_s"] = round(time.monotonic() - self.t0, 1)
        self.figures["goal_met"] = bool(goal_met)
        print(f"## {self.part}")
        for k, v in self.figures.items():
            print(f"{k}: {v if not isinstance(v, (list, dict)) else json.dumps(v)}")
        write_figures(self.part, self.figures)
        return 0 if goal_met else 1


def write_figures(part, figures):
    """`figures` as $RELIABILITY_OUT/<part>.json (with "part": <part>), when that is set; the one
    place every part writes what ci/bench/reliability joins."""
    out = os.environ.get("RELIABILITY_OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, f"{part}.json"), "w", encoding="utf-8") as f:
            json.dump({"part": part, **figures}, f, indent=1)


def on_signals_raise():
    """SIGTERM (and SIGINT, already KeyboardInterrupt) unwind the stack: `finally` cleans up."""
    def handler(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, handler)


class CpuHog:
    """One busy-looping process per core (os.cpu_count()), stopped by pid on exit."""

    def __init__(self, procs=None):
        self.n = procs or os.cpu_count() or 2
        self.procs = []

    def __enter__(self):
        for _ in range(self.n):
            self.procs.append(subprocess.Popen(
                [sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []
        return False


def docker_setup():
    """ci/services/dockerd (its last line is the lab gateway) and ci/images/probe-image."""
    p = subprocess.run([os.path.join(ROOT, "ci", "services", "dockerd")], cwd=ROOT,
                       capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        raise SetupError(f"ci/services/dockerd failed: {p.stderr.strip()[-500:]}")
    gateway = p.stdout.strip().splitlines()[-1]
    p = subprocess.run([os.path.join(ROOT, "ci", "images", "probe-image")], cwd=ROOT,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SetupError(f"ci/images/probe-image failed: {p.stderr.strip()[-500:]}")
    return gateway


def require_build():
    if not os.access(SANDPROBE, os.X_OK):
        raise SetupError(f"{SANDPROBE} missing: run ci/build first")
