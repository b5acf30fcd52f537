"""fs.write-exec: copies a binary where it can write, runs it, removes it; judges the claim."""
import os
import subprocess
import tempfile
import unittest

from probe_testing import run_in_bwrap, run_probe


def noexec_tmpfs_available():
    return os.geteuid() == 0


class WriteExecProbeTest(unittest.TestCase):
    def test_copied_binary_runs_in_a_writable_dir_and_is_removed(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_probe("fs.write-exec", {"paths": [tmp, os.path.join(tmp, "missing")],
                                            "claimed_noexec": True}).result
            self.assertEqual(os.listdir(tmp), [])
        self.assertEqual((r["outcome"], r["evidence"]), ("executes", "positive"))
        self.assertEqual(r["executes"], [tmp])
        self.assertEqual(r["tried"][0]["exit"], 0)
        self.assertEqual(r["tried"][1]["errno"], "ENOENT")

    def test_a_list_claim_judges_only_its_paths(self):
        with tempfile.TemporaryDirectory() as tmp:
            # /proc is not writable: the claim on it holds while tmp executes, unclaimed.
            r = run_probe("fs.write-exec", {"paths": [tmp], "claimed_noexec": ["/proc"]}).result
        self.assertEqual(r["outcome"], "no_exec", r)
        self.assertEqual(r["executes"], [tmp])  # still listed as a fact
        self.assertEqual([t["as"] for t in r["tried"]], [tmp, "/proc"])

    def test_dot_and_tilde_are_the_working_directory_and_home(self):
        with tempfile.TemporaryDirectory() as cwd, tempfile.TemporaryDirectory() as home:
            env = dict(os.environ, HOME=home)
            proc = run_probe("fs.write-exec", {"paths": [".", "~"]}, env=env,
                             preexec_fn=lambda: os.chdir(cwd))
            r = proc.result
        self.assertEqual([t["path"] for t in r["tried"]], [cwd, home])
        self.assertEqual(r["executes"], [cwd, home])

    @unittest.skipUnless(noexec_tmpfs_available(), "mounting a noexec tmpfs needs root")
    def test_noexec_mount_refuses_with_eacces(self):
        # bubblewrap cannot mount noexec; a private mount namespace with a noexec tmpfs can.
        with tempfile.TemporaryDirectory() as tmp:
            from probe_testing import assemble, new_ids, PYTHON
            nonce, inv = new_ids()
            script = assemble(os.path.join(os.path.dirname(__file__)),
                              {"paths": [tmp], "claimed_noexec": True}, nonce, inv)
            out = subprocess.run(
                ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o noexec,size=4m none "$1" && '
                 'exec "$2" -u -c "$3"', "sh", tmp, PYTHON, script],
                capture_output=True, text=True, timeout=60)
        self.assertIn('"outcome":"no_exec","evidence":"positive"', out.stdout, out.stderr)
        self.assertIn('"exec_errno":"EACCES"', out.stdout)
        self.assertIn('"noexec_flag":true', out.stdout)

    def test_in_bubblewrap_tmp_executes(self):
        r = run_in_bwrap("fs.write-exec", {"paths": ["/tmp", "/usr"], "claimed_noexec": True}).result
        self.assertEqual(r["outcome"], "executes")
        self.assertEqual(r["executes"], ["/tmp"])
        self.assertEqual(r["tried"][1]["errno"], "EROFS")

    def test_no_binary_to_copy_is_an_error(self):
        r = run_probe("fs.write-exec", {"paths": ["/tmp"], "binaries": ["/nonexistent"]}).result
        self.assertEqual(r["outcome"], "error")


if __name__ == "__main__":
    unittest.main()
