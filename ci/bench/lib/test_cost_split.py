"""cost_split: the figures of a hand-made report.json add up as its docstring says."""
import unittest

import cost_split as cs


def report():
    def obs(arm, probe, duration, cpu=None, phases=()):
        ev = {"duration_s": duration,
              "timeline": [{"phase": p, "start_s": a, "end_s": b} for p, a, b in phases]}
        if cpu is not None:
            ev["probe_cpu"] = {"seconds": cpu, "source": "at least: wait4 rusage"}
        return {"arm": arm, "probe": probe, "evidence": ev}
    return {"cost": {"wall_s": 10.0, "cpus": 2, "machine_cpu_s": 16.0, "harness_cpu_s": 0.5,
                     "children_cpu_s": 9.0},
            "observations": [
                obs("local", "res.cpu-loop", 6.0, 5.5, [("queued", 0, 1), ("invoke", 1, 7)]),
                obs("cli", "res.cpu-loop", 4.0, 0.5, [("queued", 0, 2), ("invoke", 2, 6)]),
                obs("docker", "net.dns", 1.0, None,
                    [("queued", 0, 3), ("invoke", 3, 4), ("create", 3, 3.5)])]}


class SplitTest(unittest.TestCase):
    def test_figures(self):
        r = report()
        r["observations"][0]["evidence"]["probe_cpu"]["source"] = "the command's own cgroup"
        f = cs.split(r)
        self.assertEqual(f["invocations"], 3)
        self.assertEqual(f["longest_probe_s"], 6.0)
        self.assertAlmostEqual(f["probe_cpu_s"], 6.0)
        self.assertAlmostEqual(f["overhead_cpu_s"], 16.0 - 6.0 - 0.5)
        self.assertAlmostEqual(f["floor_s"], 8.0)
        self.assertAlmostEqual(f["wall_over_floor"], 1.25)
        self.assertEqual(f["probe_cpu_counted"],
                         "2 of 3 invocations (1 by their own cgroup, 1 at least, by rusage)")

    def test_containers_and_client_arms(self):
        # A `docker run` client's rusage is overhead once the containers' cgroup is counted.
        f = cs.split(report(), container_cpu_s=3.0, client_arms=("cli",))
        self.assertAlmostEqual(f["probe_cpu_s"], 5.5 + 3.0)
        self.assertAlmostEqual(f["machine_over_probe"], 16.0 / 8.5)
        self.assertIn("containers by cgroup", f["probe_cpu_counted"])

    def test_phases_and_render(self):
        phases = cs.phases_by_arm(report())
        self.assertEqual(phases["docker"]["create"], (1, 0.5))
        self.assertEqual(phases["local"]["invoke"], (1, 6))
        text = cs.render("t", cs.split(report()), phases)
        self.assertIn("wall_over_floor:", text)
        self.assertIn("docker: create 0.500 (1)", text)

    def test_a_report_without_cost_is_refused(self):
        r = report()
        del r["cost"]
        with self.assertRaises(ValueError):
            cs.split(r)


if __name__ == "__main__":
    unittest.main()
