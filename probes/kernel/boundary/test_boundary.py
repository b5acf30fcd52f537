"""kernel.boundary: the kernel release against the host's, as the harness passes it."""
import os
import unittest

from probe_testing import run_probe


class BoundaryProbeTest(unittest.TestCase):
    def test_kernel_boundary_compares_with_the_host_release(self):
        same = run_probe("kernel.boundary", {"host_release": os.uname().release}).result
        self.assertEqual((same["outcome"], same["evidence"]), ("host_kernel", "positive"))
        other = run_probe("kernel.boundary", {"host_release": "0.0.0-not-this-kernel"}).result
        self.assertEqual(other["outcome"], "other_kernel")
        none = run_probe("kernel.boundary", {"host_release": ""}).result  # a suite blanked it
        self.assertEqual(none["outcome"], "error")


if __name__ == "__main__":
    unittest.main()
