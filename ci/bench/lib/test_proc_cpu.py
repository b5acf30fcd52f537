"""proc_cpu: /proc/<pid>/stat fields read right, and a difference that counts a survivor's own
CPU, a newborn's whole, and a reaped child's under its reaper."""
import subprocess
import sys
import unittest

import proc_cpu as pc


class ProcCpuTest(unittest.TestCase):
    def test_parse_stat_with_a_hostile_name(self):
        # comm may hold spaces and ")": the last ")" ends it.
        fields = ["S", "7"] + ["0"] * 9 + ["100", "20", "5", "3"] + ["0"] * 4 + ["4242"]
        text = "123 (a) b (c)) " + " ".join(fields) + " 0 0\n"
        self.assertEqual(pc.parse_stat(text), ("a) b (c)", 7, 4242, 120, 8))

    def test_diff_groups_and_kernel_threads(self):
        before = {"busy": 0, "10": ["dockerd", 1, 5, 100, 0], "11": ["kworker/0:1", 2, 6, 10, 0],
                  "12": ["gone", 1, 7, 50, 0]}
        after = {"busy": 1000, "10": ["dockerd", 1, 5, 150, 30], "11": ["kworker/0:1", 2, 6, 15, 0],
                 "13": ["runc", 10, 9, 20, 0],
                 "12": ["recycled", 1, 99, 1, 0]}  # the same pid, another start time: a newborn
        t = pc.TICK
        g = pc.diff(before, after)
        self.assertAlmostEqual(g["dockerd"]["own"], 50 / t)
        self.assertAlmostEqual(g["dockerd"]["reaped"], 30 / t)
        self.assertAlmostEqual(g["kernel threads"]["own"], 5 / t)
        self.assertAlmostEqual(g["runc"]["own"], 20 / t)
        self.assertAlmostEqual(g["recycled"]["own"], 1 / t)
        self.assertNotIn("gone", g)
        self.assertAlmostEqual(pc.machine_busy_s(before, after), 1000 / t)
        text = pc.render(g, top=2, busy_s=pc.machine_busy_s(before, after))
        self.assertIn("dockerd", text)
        self.assertIn("(the rest)", text)
        self.assertIn("not attributed", text)

    def test_a_reaped_childs_cpu_lands_on_its_reaper(self):
        before = pc.snap()
        subprocess.run([sys.executable, "-S", "-c",
                        "import time\nend = time.process_time() + 0.3\n"
                        "while time.process_time() < end: pass"], check=True)
        g = pc.diff(before, pc.snap())
        me = [v for k, v in g.items() if k.startswith("python")]
        self.assertTrue(me, g)
        self.assertGreaterEqual(max(v["reaped"] for v in me), 0.25, g)


if __name__ == "__main__":
    unittest.main()
