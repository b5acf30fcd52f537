"""state.persists as the runner deploys it: `calls` calls with the same nonce and invocation,
call k given the results of calls 1..k-1 as `previous`. Plain processes sharing /tmp, a cwd and
$HOME leak every mark; a warm pool (bubblewrap binding /tmp, cwd and $HOME from one of two
member directories, taken in turn, a PID namespace each) leaks only to every second caller."""
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from probe_testing import PYTHON, Run, assemble, new_ids, probe_dir


class PersistsProbeTest(unittest.TestCase):
    def call(self, params, nonce, invocation, cwd, wrap=(), env=None):
        script = assemble(probe_dir("state.persists"), params, nonce, invocation)
        out = subprocess.run(list(wrap) + [PYTHON, "-u", "-c", script], capture_output=True,
                             text=True, cwd=cwd, timeout=30, env=env)
        return Run(nonce, invocation, out.stdout, out.stderr, out.returncode)

    def sequence(self, calls, member_of, hold_s=5, concurrent=False):
        """Runs `calls` calls; member_of(k) -> (wrap argv, cwd, env) for call k (1-based)."""
        nonce, inv = new_ids()
        previous, results = [], []
        for k in range(1, calls + 1):
            wrap, cwd, env = member_of(k)
            r = self.call({"call": k, "calls": calls, "previous": previous, "hold_s": hold_s,
                           "concurrent": concurrent}, nonce, inv, cwd, wrap, env).result
            self.assertIsNotNone(r, "call %d left no result" % k)
            results.append(r)
            previous = previous + [r]
        return results

    def test_plain_processes_leak_every_mark_to_the_next_call(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, HOME=d)
            results = self.sequence(3, lambda k: ((), d, env))
        first, last = results[0], results[-1]
        self.assertEqual(first["outcome"], "planted")
        self.assertEqual(sorted(first["made"]), ["cwd", "env", "home", "process", "tmp"])
        self.assertEqual((last["outcome"], last["evidence"]), ("persisted", "positive"))
        for mark in ("tmp file", "cwd file", "$HOME file", "process"):
            self.assertIn("call 2 found call 1's %s" % mark, last["pairs"])
        self.assertNotIn("call 2 found call 1's env var", last["pairs"])  # a fresh interpreter
        # Nothing is left: found marks were removed, the last call removed its own.
        for r in results:
            for key in ("tmp", "cwd", "home"):
                self.assertFalse(os.path.exists(r["planted"][key]["path"]), (r["call"], key))
        pid = last["planted"]["process"]["pid"]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and os.path.exists("/proc/%d" % pid):
            with open("/proc/%d/stat" % pid, "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            time.sleep(0.05)

    def test_a_warm_pool_of_two_leaks_to_every_second_caller(self):
        bwrap = shutil.which("bwrap")
        self.assertIsNotNone(bwrap, "bubblewrap is needed (ci/bootstrap installs it)")
        with tempfile.TemporaryDirectory() as d:
            members = []
            for i in range(2):
                m = {k: os.path.join(d, "m%d-%s" % (i, k)) for k in ("tmp", "cwd", "home")}
                for p in m.values():
                    os.makedirs(p)
                members.append(m)

            def member_of(k):
                m = members[(k - 1) % 2]
                wrap = [bwrap, "--dev-bind", "/", "/", "--bind", m["tmp"], "/tmp",
                        "--bind", m["cwd"], m["cwd"], "--bind", m["home"], m["home"],
                        "--unshare-pid", "--die-with-parent", "--setenv", "HOME", m["home"],
                        "--chdir", m["cwd"]]
                return wrap, m["cwd"], dict(os.environ, HOME=m["home"])
            results = self.sequence(4, member_of)
        last = results[-1]
        self.assertEqual(last["outcome"], "persisted", last)
        self.assertIn("call 3 found call 1's tmp file", last["pairs"])
        self.assertIn("call 4 found call 2's cwd file", last["pairs"])
        self.assertFalse([p for p in last["pairs"] if p.startswith("call 2 found call 1")],
                         "consecutive calls land on different members")
        self.assertFalse([p for p in last["pairs"] if p.endswith("process")],
                         "each evaluation had its own PID namespace")

    def test_fresh_sandboxes_find_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            bwrap = shutil.which("bwrap")

            def member_of(k):
                m = os.path.join(d, "c%d" % k)
                os.makedirs(m)
                wrap = [bwrap, "--dev-bind", "/", "/", "--tmpfs", "/tmp", "--bind", m, m,
                        "--unshare-pid", "--die-with-parent", "--setenv", "HOME", m,
                        "--chdir", m]
                return wrap, m, dict(os.environ, HOME=m)
            results = self.sequence(3, member_of)
        self.assertEqual((results[-1]["outcome"], results[-1]["evidence"]), ("fresh", "absence"))
        self.assertEqual(results[-1]["looked_at"], [1, 2])

    def test_32_calls_fit_in_one_script_each(self):
        # Each result carries only its own findings: `previous` grows linearly, so the closing
        # call after 32 sequential calls and the pair (call 35, 34 earlier results, every one of
        # them a finding) stays under the 64 KiB script cap.
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, HOME=d)
            results = self.sequence(32, lambda k: ((), d, env), hold_s=2, concurrent=True)
            self.assertEqual(results[31]["outcome"], "persisted")
            self.assertEqual(len(results[31]["pairs"]), 4, "its own findings only")
            nonce, inv = new_ids()
            closing = assemble(probe_dir("state.persists"),
                               {"call": 35, "calls": 32, "previous": results + results[-2:],
                                "hold_s": 2, "overlap_s": 1, "concurrent": True}, nonce, inv)
        self.assertLess(len(closing.encode()), 64 * 1024)

    def test_the_two_call_shape_still_works(self):
        nonce, inv = new_ids()
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, HOME=d)
            one = self.call({"call": 1, "calls": 2, "previous": [], "hold_s": 5,
                             "concurrent": False}, nonce, inv, d, env=env).result
            two = self.call({"call": 2, "calls": 2, "previous": one, "hold_s": 5,
                             "concurrent": False}, nonce, inv, d, env=env).result
        self.assertEqual(two["outcome"], "persisted")


    def pair_then_close(self, member_of, calls=1):
        """`calls` sequential calls, calls+1 and calls+2 at the same moment, then the closing call,
        as the runner sequences a concurrent probe -> the closing call's result."""
        nonce, inv = new_ids()
        base = {"calls": calls, "hold_s": 5, "overlap_s": 1.5}
        previous = []
        for k in range(1, calls + 1):
            wrap, cwd, env = member_of(k)
            previous.append(self.call(dict(base, call=k, previous=list(previous)), nonce, inv,
                                      cwd, wrap, env).result)
        procs = []
        for k, other in ((calls + 1, calls + 2), (calls + 2, calls + 1)):
            wrap, cwd, env = member_of(k)
            script = assemble(probe_dir("state.persists"),
                              dict(base, call=k, previous=previous, concurrent_with=other),
                              nonce, inv)
            procs.append(subprocess.Popen(list(wrap) + [PYTHON, "-u", "-c", script], cwd=cwd,
                                          env=env, stdout=subprocess.PIPE, text=True))
        for p in procs:
            out, _ = p.communicate(timeout=30)
            r = Run(nonce, inv, out, "", p.returncode).result
            self.assertIsNotNone(r)
            self.assertEqual(r["outcome"], "persisted" if r["pairs"] else "planted")
            previous.append(r)
        wrap, cwd, env = member_of(calls + 3)
        return self.call(dict(base, call=calls + 3, previous=previous), nonce, inv, cwd, wrap,
                         env).result

    def test_a_pair_in_one_shared_sandbox_finds_each_other_in_flight(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, HOME=d)
            last = self.pair_then_close(lambda k: ((), d, env))
        self.assertEqual(last["outcome"], "persisted", last)
        for mark in ("tmp file", "cwd file", "$HOME file", "process"):
            self.assertIn("call 2 found call 3's %s (both in flight)" % mark, last["pairs"])
            self.assertIn("call 3 found call 2's %s (both in flight)" % mark, last["pairs"])

    def test_a_pair_in_separate_sandboxes_finds_nothing_and_says_they_overlapped(self):
        bwrap = shutil.which("bwrap")
        with tempfile.TemporaryDirectory() as d:
            def member_of(k):
                m = os.path.join(d, "c%d" % k)
                os.makedirs(m)
                wrap = [bwrap, "--dev-bind", "/", "/", "--tmpfs", "/tmp", "--bind", m, m,
                        "--unshare-pid", "--proc", "/proc", "--die-with-parent",
                        "--setenv", "HOME", m, "--chdir", m]
                return wrap, m, dict(os.environ, HOME=m)
            last = self.pair_then_close(member_of)
        self.assertEqual((last["outcome"], last["evidence"]), ("fresh", "absence"), last)
        self.assertIn("calls 2 and 3 were in flight together", last["detail"])
        self.assertEqual(last["looked_at"], [1, 2, 3])


if __name__ == "__main__":
    unittest.main()
