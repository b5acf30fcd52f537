"""state.persists as the runner deploys it: two calls with the same nonce and invocation, the
second given the first's result as `previous` (plain processes sharing /tmp and a cwd)."""
import os
import subprocess
import tempfile
import time
import unittest

from probe_testing import PYTHON, Run, assemble, new_ids, probe_dir


class PersistsProbeTest(unittest.TestCase):
    def call(self, params, nonce, invocation, cwd):
        script = assemble(probe_dir("state.persists"), params, nonce, invocation)
        out = subprocess.run([PYTHON, "-u", "-c", script], capture_output=True, text=True,
                             cwd=cwd, timeout=30)
        return Run(nonce, invocation, out.stdout, out.stderr, out.returncode)

    def test_plain_processes_keep_files_and_the_process_but_not_the_env(self):
        nonce, inv = new_ids()
        with tempfile.TemporaryDirectory() as cwd:
            one = self.call({"call": 1, "previous": None, "hold_s": 5}, nonce, inv, cwd).result
            self.assertEqual(one["outcome"], "planted")
            self.assertEqual(sorted(one["made"]), ["cwd", "env", "process", "tmp"])
            pid = one["planted"]["process"]["pid"]
            self.assertTrue(os.path.exists("/proc/%d" % pid), "the background process lives on")
            two = self.call({"call": 2, "previous": one, "hold_s": 5}, nonce, inv, cwd).result
            self.assertEqual((two["outcome"], two["evidence"]), ("persisted", "positive"))
            self.assertEqual(sorted(two["found"]), ["cwd file", "process", "tmp file"])
            # call 2 cleaned up: files removed, process killed (then reaped by init)
            self.assertFalse(os.path.exists(one["planted"]["tmp"]["path"]))
            self.assertFalse(os.path.exists(one["planted"]["cwd"]["path"]))
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    with open("/proc/%d/stat" % pid, "rb") as f:
                        if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                            break
                except OSError:
                    break
                time.sleep(0.05)
            else:
                self.fail("call 2 did not kill the background process %d" % pid)

    def test_nothing_found_is_fresh_and_nothing_planted_is_unknown(self):
        nonce, inv = new_ids()
        previous = {"outcome": "planted", "token": "0" * 16, "made": ["tmp", "process"],
                    "planted": {"tmp": {"path": "/tmp/.sandprobe-state-absent-" + inv},
                                "process": {"pid": 2 ** 22 + 1, "start": 1}}}
        with tempfile.TemporaryDirectory() as cwd:
            fresh = self.call({"call": 2, "previous": previous}, nonce, inv, cwd).result
            self.assertEqual((fresh["outcome"], fresh["evidence"], fresh["found"]),
                             ("fresh", "absence", []))
            none = self.call({"call": 2, "previous": None}, nonce, inv, cwd).result
            self.assertEqual(none["outcome"], "not_planted")


if __name__ == "__main__":
    unittest.main()
