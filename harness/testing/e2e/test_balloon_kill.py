"""E2E: a memory balloon killed mid-way by a real memory cgroup still reports its last flushed
progress record (docs/traps.md, trap 1), and the row PASSes as contained (killed).

The test makes its own memory cgroup (v1 memory.limit_in_bytes, else v2 memory.max), limited to
96 MiB; a command manifest moves only the sandbox's own shell into it and execs Python there. The
balloon targets 2 x limits.memory = 192 MiB in 16 MiB steps. The cgroup is removed at the end.
"""
import os
import re
import tempfile
import time
import unittest
import uuid

import e2e_util as u

LIMIT_MIB = 96
V1_ROOT = "/sys/fs/cgroup/memory"


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def _v2_root():
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(root, "cgroup.controllers")):
            return root
    return None


def make_memory_cgroup():
    """-> (path, version). Raises AssertionError with every reason when no way works."""
    name = "sandprobe-e2e-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
    limit = LIMIT_MIB << 20
    why = []
    if os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        cg = os.path.join(V1_ROOT, name)
        try:
            os.mkdir(cg)
            _write(os.path.join(cg, "memory.limit_in_bytes"), limit)
            if os.path.exists(os.path.join(cg, "memory.memsw.limit_in_bytes")):
                _write(os.path.join(cg, "memory.memsw.limit_in_bytes"), limit)  # no swap escape
            return cg, 1
        except OSError as exc:
            why.append("cgroup v1 %s: %s" % (cg, exc))
            remove_cgroup(cg)
    else:
        why.append("cgroup v1: no memory controller at %s" % V1_ROOT)
    root = _v2_root()
    if root is None:
        why.append("cgroup v2: no cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified")
    else:
        # Only where the memory controller is already delegated: this test changes no
        # system-wide setting (it never writes +memory into a parent's subtree_control).
        try:
            with open("/proc/self/cgroup") as f:
                own = [l.split(":", 2)[2].strip() for l in f if l.startswith("0::")]
        except OSError:
            own = []
        parents = [os.path.join(root, own[0].lstrip("/"))] if own and own[0] != "/" else []
        parents.append(root)
        for parent in parents:
            try:
                with open(os.path.join(parent, "cgroup.subtree_control")) as f:
                    if "memory" not in f.read().split():
                        why.append("cgroup v2 %s: memory controller not enabled in "
                                   "cgroup.subtree_control" % parent)
                        continue
                cg = os.path.join(parent, name)
                os.mkdir(cg)
                try:
                    _write(os.path.join(cg, "memory.max"), limit)
                    if os.path.exists(os.path.join(cg, "memory.swap.max")):
                        _write(os.path.join(cg, "memory.swap.max"), 0)
                except OSError:
                    remove_cgroup(cg)
                    raise
                return cg, 2
            except OSError as exc:
                why.append("cgroup v2 %s: %s" % (parent, exc))
    raise AssertionError("cannot make a %d MiB memory cgroup for the balloon test (run as root "
                         "with cgroup v1 memory or a delegated cgroup v2): %s"
                         % (LIMIT_MIB, "; ".join(why)))


def remove_cgroup(cg):
    """rmdir, retried briefly while the killed processes are released."""
    for _ in range(50):
        try:
            os.rmdir(cg)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.1)
    return False


def oom_kills(cg, version):
    """The cgroup's oom_kill counter, or None when the kernel does not report one."""
    path = os.path.join(cg, "memory.oom_control" if version == 1 else "memory.events")
    try:
        with open(path) as f:
            m = re.search(r"^oom_kill (\d+)$", f.read(), re.M)
    except OSError:
        return None
    return int(m.group(1)) if m else None


class BalloonKilledByCgroup(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        base = cls.make_tmp("sandprobe-e2e-balloon-")
        cls.cg, cls.cg_version = make_memory_cgroup()
        try:
            # `$$` is the sandbox's own shell: only it (then the exec'd Python) joins the cgroup.
            argv = ["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$0" "$@"' % cls.cg,
                    u.python_for_env_i(), "-u", "-c", "{script}"]
            manifest = u.write_manifest(os.path.join(base, "cgroup-balloon.yaml"),
                                        "cgroup-96mi", argv, control=u.LOCAL_MANIFEST,
                                        limits={"memory": "%dMi" % LIMIT_MIB},
                                        description="python3 in a %d MiB memory cgroup" % LIMIT_MIB)
            suite = u.write_suite(base, "balloon", ["res.memory-balloon"])
            cls.run_once(["--suite", suite, "--sandbox", manifest, "--default-timeout", "20",
                          "--grace", "2"], timeout=60)
            cls.oom_kills = oom_kills(cls.cg, cls.cg_version)
            with open(os.path.join(cls.cg, "cgroup.procs")) as f:
                cls.left_in_cgroup = f.read().split()
        finally:
            cls.removed = remove_cgroup(cls.cg)

    def setUp(self):
        super().setUp()
        self.obs = u.observations(self.report, "cgroup-96mi")["res.memory-balloon"]
        self.ev = self.obs["evidence"]

    def test_exit_code_0(self):
        self.assertEqual(self.res.returncode, 0, self.res.describe())

    def test_row_passes_contained_killed(self):
        v = u.verdicts(self.report, "cgroup-96mi")["res.memory-balloon"]
        self.assertEqual(v["verdict"], "PASS", v["reason"])
        self.assertEqual(v["validated_by"], "local")
        self.assertEqual(self.obs["exposure"], "contained", self.obs["reason"])
        self.assertEqual(self.obs["evidence_kind"], "positive")
        killed = (self.ev["ending"] == "signaled" and self.ev["signal"] == 9) or \
                 (self.ev["ending"] == "exited" and self.ev["exit_code"] == 137)
        self.assertTrue(killed, self.ev)
        self.assertIsNone(self.ev["result"], "a SIGKILLed balloon cannot have written a result")
        self.assertEqual(self.ev["driver_facts"]["ended_by"], "sandbox")
        if self.oom_kills is not None:
            self.assertGreaterEqual(self.oom_kills, 1, "the cgroup's OOM killer did not fire")

    def test_last_flushed_progress_is_kept(self):
        last = self.ev["last_progress"]
        self.assertIsNotNone(last, "the progress records before the kill were lost")
        self.assertEqual(last["kind"], "progress")
        self.assertGreaterEqual(last["allocated_mib"], 16)
        self.assertLessEqual(last["allocated_mib"], LIMIT_MIB)
        self.assertEqual(last["allocated_mib"] % 16, 0)
        self.assertIn("last progress", self.obs["reason"])

    def test_control_reached_the_target(self):
        ctl = u.observations(self.report, "local")["res.memory-balloon"]["evidence"]["result"]
        self.assertEqual(ctl["outcome"], "target_reached")
        self.assertEqual(ctl["target_mib"], 2 * LIMIT_MIB)

    def test_markdown_evidence_mentions_last_progress(self):
        with open(os.path.join(self.out, "matrix.md"), encoding="utf-8") as f:
            md = f.read()
        section = md[md.index("<details><summary>res.memory-balloon"):]
        section = section[section.index("**cgroup-96mi**"):]
        want = str(self.ev["last_progress"]["allocated_mib"])
        facts = [l for l in section.splitlines() if l.startswith("- last progress:")]
        self.assertTrue(facts, "no 'last progress' fact in the markdown evidence")
        self.assertIn(want, facts[0])
        self.assertIn("allocated", facts[0])

    def test_cgroup_removed_and_nothing_else_moved(self):
        self.assertEqual(self.left_in_cgroup, [], "processes left in the test cgroup")
        self.assertTrue(self.removed, "could not remove %s" % self.cg)
        self.assertFalse(os.path.exists(self.cg))


class TimeoutIsNotAMemoryLimit(unittest.TestCase):
    """A sandbox with a wall-clock timeout and NO memory limit must not PASS the balloon row.

    `timeout 0.4 python3` claims limits.memory 512Mi (balloon target 1 GiB, the control reaches
    it in ~0.8 s here); GNU timeout ends the candidate with exit 124 part-way. Exit 124 is a
    timeout by definition (docs/traps.md, trap 5: a kill code alone does not prove the memory limit
    held), so the row has no evidence of memory containment: INCONCLUSIVE, never PASS.
    (On a machine fast enough to reach the target first, the row is FAIL, also fine here.)
    """

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-timeout-balloon-")
        base = cls.tmp.name
        manifest = u.write_manifest(
            os.path.join(base, "timeout-only.yaml"), "timeout-only",
            ["timeout", "0.4", u.python_for_env_i(), "-u", "-c", "{script}"],
            control=u.LOCAL_MANIFEST, limits={"memory": "512Mi"},
            description="a 0.4 s timeout and no memory limit at all")
        suite = u.write_suite(base, "balloon", ["res.memory-balloon"],
                              params={"res.memory-balloon": {"step_mib": 1}})
        cls.out = os.path.join(base, "out")
        cls.res = u.run_sandprobe(
            ["run", "--suite", suite, "--sandbox", manifest, "--out", cls.out,
             "--canary-dir", os.path.join(base, "canary"), "--default-timeout", "20",
             "--grace", "2"], timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_timeout_kill_is_not_memory_containment(self):
        report = u.load_report(self.out)
        ev = u.observations(report, "timeout-only")["res.memory-balloon"]["evidence"]
        v = u.verdicts(report, "timeout-only")["res.memory-balloon"]
        if ev["ending"] == "exited" and ev["exit_code"] == 124:
            self.assertNotEqual(v["verdict"], "PASS",
                                "a timeout (exit 124) after %s was judged memory containment: %s"
                                % (ev["last_progress"], v["reason"]))
        else:
            self.assertEqual(v["verdict"], "FAIL", v["reason"])
        self.assertIn(self.res.returncode, (1, 2), self.res.describe())


if __name__ == "__main__":
    unittest.main()
