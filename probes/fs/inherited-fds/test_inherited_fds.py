"""fs.inherited-fds: nothing beyond 0-2, and a launcher that leaves a directory outside the
sandbox's root and a secret file open (through bubblewrap, which passes them on)."""
import hashlib
import os
import shutil
import tempfile
import unittest

from probe_testing import BWRAP, run_probe


class InheritedFdsProbeTest(unittest.TestCase):
    def test_only_the_standard_three(self):
        r = run_probe("fs.inherited-fds", {}).result  # Popen closes what it does not pass
        self.assertEqual((r["outcome"], r["evidence"], r["count"]), ("none", "positive", 0))

    @unittest.skipUnless(shutil.which("bwrap"), "bubblewrap")
    def test_a_leaky_launcher_through_bubblewrap(self):
        with tempfile.TemporaryDirectory() as d:
            token = os.path.join(d, "token")
            with open(token, "w") as f:
                f.write("sptok_" + "ab" * 24)
            with open(token, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
            dir_fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            file_fd = os.open(token, os.O_RDONLY)
            try:
                r = run_probe("fs.inherited-fds", {"token_sha256": sha}, prefix=BWRAP,
                              python="python3", pass_fds=(dir_fd, file_fd)).result
            finally:
                os.close(dir_fd)
                os.close(file_fd)
        self.assertEqual((r["outcome"], r["evidence"]), ("inherited", "positive"), r)
        by_fd = {e["fd"]: e for e in r["descriptors"]}
        self.assertIs(by_fd[dir_fd]["outside_root"], True)
        self.assertIs(by_fd[dir_fd]["planted_token_inside"], True)
        self.assertIs(by_fd[file_fd]["read"]["planted_token"], True)
        self.assertNotIn("ab" * 24, str(r))


if __name__ == "__main__":
    unittest.main()
