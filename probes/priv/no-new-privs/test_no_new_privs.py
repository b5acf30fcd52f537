"""priv.no-new-privs: reads the bit of this process, and sees it when a parent set it."""
import subprocess
import sys
import unittest

from probe_testing import assemble, probe_dir, run_probe


class NoNewPrivsProbeTest(unittest.TestCase):
    def test_no_new_privs_of_this_process(self):
        nnp = run_probe("priv.no-new-privs", {}).result
        self.assertIn(nnp["outcome"], ("set", "not_set"))
        self.assertIn(nnp["prctl"], (0, 1))

    def test_no_new_privs_set_by_a_parent_is_seen(self):
        # setpriv --no-new-privs (util-linux) sets the bit before exec; the probe must read 1.
        script = assemble(probe_dir("priv.no-new-privs"), {}, "0123456789abcdef", "i1")
        out = subprocess.run(["setpriv", "--no-new-privs", sys.executable, "-u", "-c", script],
                             capture_output=True, text=True, timeout=30)
        self.assertIn('"outcome":"set"', out.stdout, out.stderr)


if __name__ == "__main__":
    unittest.main()
