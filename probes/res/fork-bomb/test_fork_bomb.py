"""res.fork-bomb: forks its target and reaps every child, is capped by RLIMIT_NPROC, leaves no
child behind on SIGTERM or SIGKILL, and refuses a target over its safety cap."""
import os
import secrets
import signal
import time
import unittest

from probe_testing import (DEBIAN_PYTHON, descriptor, run_in_bwrap, run_probe, start_probe,
                           terminate_at_first_progress)


def session_members(sid):
    """Live (non-zombie) processes of session sid, from /proc/<pid>/stat."""
    live = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            live.append(int(name))
    return live


def uid_of(pid):
    try:
        with open("/proc/%s/status" % pid) as f:
            return int([l for l in f if l.startswith("Uid:")][0].split()[1])
    except (OSError, IndexError):
        return None


def wait_until(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return predicate()


class ForkBombProbeTest(unittest.TestCase):
    def test_sized_params_follow_the_claimed_limits(self):
        fork = descriptor("res.fork-bomb")
        target, claimed = fork["params"]["target"], fork["params"]["claimed_pids"]
        self.assertEqual((target["from_limit"], target["factor"], claimed["from_limit"],
                          claimed["factor"]), ("pids", 2, "pids", 1))
        self.assertEqual(fork["classify"]["exceeds"], {"field": "forked", "param": "claimed_pids"})

    def test_fork_bomb_small_target_all_forked_and_all_reaped(self):
        run = run_probe("res.fork-bomb", {"target": 40, "hold_s": 0.2},
                        preexec_fn=os.setsid)
        self.assertEqual([p["forked"] for p in run.kinds("progress")], [1, 2, 4, 8, 16, 32])
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["forked"], r["left_behind"],
                          r["killed_children"]), ("all_forked", "positive", 40, 0, 0))
        self.assertEqual((run.other_lines, run.stderr), ([], ""))  # children write nothing
        self.assertEqual(run.records[0]["kind"], "start")

    def test_fork_bomb_capped_by_rlimit_nproc_as_an_unused_uid(self):
        # RLIMIT_NPROC is ignored for root (CI runs as root), so drop to a uid that no process
        # uses (nobody may be busy: the limit counts the uid's processes machine-wide).
        if os.geteuid() != 0:
            raise AssertionError("this test switches to an unused uid and needs root")
        used = {uid_of(n) for n in os.listdir("/proc") if n.isdigit()}
        uid = next(u for u in range(61000 + secrets.randbelow(1000), 70000) if u not in used)
        prefix = ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups",
                  "prlimit", "--nproc=11"]
        run = run_probe("res.fork-bomb", {"target": 64, "hold_s": 0.2}, prefix=prefix,
                        python=DEBIAN_PYTHON, preexec_fn=os.setsid)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["left_behind"]),
                         ("capped", "positive", "EAGAIN", 0), run.stderr)
        self.assertTrue(0 < r["forked"] <= 10, r["forked"])  # python itself counts too

    def test_fork_bomb_sigterm_kills_and_reaps_every_child(self):
        proc, _, _ = start_probe("res.fork-bomb", {"target": 256, "hold_s": 30},
                                 preexec_fn=os.setsid)
        try:
            _, rest, err = terminate_at_first_progress(proc, timeout=15)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.assertEqual(proc.returncode, 143, err)
        self.assertNotIn('"kind":"result"', rest)
        self.assertEqual(session_members(proc.pid), [])  # the parent reaped them all

    def test_fork_bomb_children_end_when_the_parent_is_killed(self):
        proc, _, _ = start_probe("res.fork-bomb", {"target": 64, "hold_s": 30},
                                 preexec_fn=os.setsid)
        try:
            for line in proc.stdout:
                if '"forked":64' in line:
                    break
            self.assertGreaterEqual(len(session_members(proc.pid)), 64)
            proc.kill()  # SIGKILL: no finally runs; the children see EOF on the release pipe
            proc.wait()
            self.assertTrue(wait_until(lambda: session_members(proc.pid) == [], 5),
                            session_members(proc.pid))
        finally:
            for pid in session_members(proc.pid):
                os.kill(pid, signal.SIGKILL)
            proc.stdout.close()
            proc.stderr.close()

    def test_fork_bomb_over_the_safety_cap_forks_nothing(self):
        r = run_probe("res.fork-bomb", {"target": 5000}).result
        self.assertEqual((r["outcome"], r["evidence"], r["forked"]),
                         ("over_safety_cap", "absence", 0))

    def test_fork_bomb_inside_the_sandbox(self):
        r = run_in_bwrap("res.fork-bomb", {"target": 32, "hold_s": 0.1}).result
        self.assertEqual((r["outcome"], r["forked"], r["left_behind"]), ("all_forked", 32, 0))


if __name__ == "__main__":
    unittest.main()
