"""proc.host-pids: counts the processes it can see outside its own tree, never printing a
command line; in a PID namespace of its own it sees only its tree and what shares it."""
import secrets
import subprocess
import sys
import unittest

from probe_testing import BWRAP, Run, assemble, new_ids, probe_dir, run_in_bwrap, run_probe


class HostPidsProbeTest(unittest.TestCase):
    def test_host_pids_sees_a_sibling_but_never_its_command_line(self):
        secret = "sandprobe-argv-secret-" + secrets.token_hex(8)
        sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", secret])
        try:
            run = run_probe("proc.host-pids", {})
        finally:
            sibling.kill()
            sibling.wait()
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["own_pid_visible"]),
                         ("foreign_visible", "positive", True))
        self.assertGreaterEqual(r["foreign"], 1)  # the sibling at least
        self.assertEqual(r["visible"], r["own_tree"] + r["foreign"])
        self.assertGreaterEqual(r["own_tree"], 2)  # the probe and this test runner, its ancestor
        self.assertTrue(0 < len(r["foreign_comm"]) <= 5, r["foreign_comm"])
        self.assertNotIn(secret, run.stdout + run.stderr)

    def test_host_pids_without_proc_is_unknown(self):
        r = run_probe("proc.host-pids", {"proc": "/nonexistent-proc"}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("no_proc", "absence", "ENOENT"))

    def test_host_pids_own_namespace_and_a_sibling_inside_it(self):
        # --unshare-pid (in --unshare-all) and a fresh --proc: bwrap's init and the probe only.
        r = run_in_bwrap("proc.host-pids", {}).result
        self.assertEqual((r["outcome"], r["evidence"], r["foreign"], r["foreign_comm"]),
                         ("own_only", "positive", 0, []))
        self.assertEqual(r["visible"], r["own_tree"])
        # A sibling in the same namespace (sh's background sleep) is foreign; sh is an ancestor.
        nonce, invocation = new_ids()
        script = assemble(probe_dir("proc.host-pids"), {}, nonce, invocation)
        shell = 'sleep 30 & python3 -u -c "$1"; st=$?; kill $!; exit $st'
        out = subprocess.run(BWRAP + ["sh", "-c", shell, "sh", script], capture_output=True,
                             text=True, timeout=30)
        r = Run(nonce, invocation, out.stdout, out.stderr, out.returncode).result
        self.assertEqual((r["outcome"], r["foreign"], r["foreign_comm"], r["visible"]),
                         ("foreign_visible", 1, ["sleep"], 4))


if __name__ == "__main__":
    unittest.main()
