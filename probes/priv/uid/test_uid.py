"""priv.uid, run here as root (CI and this machine) or not: the row must show which."""
import os
import unittest

from probe_testing import run_probe


class UidProbeTest(unittest.TestCase):
    def test_uid_of_this_process(self):
        uid = run_probe("priv.uid", {}).result
        self.assertEqual(uid["outcome"], "root" if os.geteuid() == 0 else "unprivileged")


if __name__ == "__main__":
    unittest.main()
