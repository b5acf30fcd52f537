"""harness_usage.measure sees a process's own peak RSS and CPU apart from its child's."""
import os
import sys
import unittest

import harness_usage as hu

PARENT = """
import subprocess
b = bytearray(96 << 20)
for i in range(0, len(b), 4096): b[i] = 1
subprocess.run([sys.executable, "-c", CHILD])
s = 0
for i in range(2_000_000): s += i
""".replace("CHILD", repr("x = bytearray(200 << 20)\nfor i in range(0, len(x), 4096): x[i] = 1"))


class MeasureTest(unittest.TestCase):
    def test_own_peak_and_cpu_apart_from_the_child(self):
        m = hu.measure([sys.executable, "-c", "import sys" + PARENT], timeout=120)
        self.assertEqual(m["exit_code"], 0, m)
        self.assertGreater(m["harness_hwm_kib"], 96 << 10, m)   # its own 96 MiB
        self.assertLess(m["harness_hwm_kib"], 180 << 10, m)     # not the child's 200 MiB
        self.assertGreater(m["tree_maxrss_kib"], 200 << 10, m)  # the child's, in the tree
        self.assertGreater(m["harness_cpu_s"], 0.05, m)         # the loop after the child
        self.assertGreater(m["children_cpu_s"], 0.0, m)

    def test_exit_code_and_timeout(self):
        self.assertEqual(hu.measure([sys.executable, "-c", "raise SystemExit(3)"])["exit_code"], 3)
        m = hu.measure([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
        self.assertEqual(m["exit_code"], -9, m)


if __name__ == "__main__":
    unittest.main()
