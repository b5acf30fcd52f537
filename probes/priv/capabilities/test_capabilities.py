"""priv.capabilities, run here as root (CI and this machine) or not: the row must show which."""
import os
import unittest

from probe_testing import run_probe


class CapabilitiesProbeTest(unittest.TestCase):
    def test_capabilities_of_this_process(self):
        caps = run_probe("priv.capabilities", {}).result
        self.assertEqual(caps["outcome"], "capable" if os.geteuid() == 0 else "no_capabilities")


if __name__ == "__main__":
    unittest.main()
