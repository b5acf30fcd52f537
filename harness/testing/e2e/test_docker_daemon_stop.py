"""End-to-end: dockerd stops in the middle of a run. The run must end by itself (no hang), with
ERROR cells that say the daemon went away, and exit 2 (no FAIL, missing evidence). When the
daemon is back (ci/services/dockerd), `sandprobe cleanup` removes what the run could not.
Runs under the ctest resource lock "dockerd" so no other docker test sees the daemon stop."""
import os
import signal
import subprocess
import tempfile
import time
import unittest

import e2e_util as u
from test_docker import GATEWAY, SUITE, containers_of, require_docker

SERVICES = os.path.join(u.HOME, "ci", "services", "dockerd")


def dockerd_pids():
    out = subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


class DaemonStopsMidRun(unittest.TestCase):
    def test_error_cells_no_hang_and_cleanup_afterwards(self):
        require_docker()
        with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-dockerd-stop-") as tmp:
            out = os.path.join(tmp, "out")
            canary = os.path.join(tmp, "canary")
            p = subprocess.Popen(
                [u.BIN, "run", "--suite", SUITE, "--out", out, "--canary-dir", canary,
                 "--sandbox", os.path.join(u.MANIFESTS, "docker", "hardened.yaml"),
                 "--control", u.LOCAL_MANIFEST, "--canary-bind", GATEWAY, "--jobs", "4"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=dict(os.environ, SANDPROBE_HOME=u.HOME))
            try:
                time.sleep(5)  # preflight done, containers running (the loop rows for sure)
                pids = dockerd_pids()
                self.assertTrue(pids, "no dockerd to stop")
                for pid in pids:
                    os.kill(pid, signal.SIGTERM)
                start = time.monotonic()
                stdout, stderr = p.communicate(timeout=120)  # no hang
                took = time.monotonic() - start
            finally:
                if p.poll() is None:
                    p.kill()
                    p.communicate()
                subprocess.run([SERVICES], check=True, capture_output=True)
            self.assertLess(took, 120)
            self.assertEqual(p.returncode, 2, stderr.decode(errors="replace")[-3000:])
            report = u.load_report(out)
            verdicts = u.verdicts(report, "docker-hardened")
            errors = {k: v for k, v in verdicts.items() if v["verdict"] == "ERROR"}
            self.assertTrue(errors, verdicts)
            for probe, v in errors.items():
                self.assertIn("Docker Engine API", v["reason"], probe)
            required = {k: v for k, v in verdicts.items() if v["level"] == "required"}
            self.assertNotIn("FAIL", {v["verdict"] for v in required.values()})
            # The daemon is back: leftovers of that run are found by label and removed.
            res = u.run_sandprobe(["cleanup", "--canary-dir", canary, "--tmp", tmp], timeout=60)
            self.assertEqual(res.returncode, 0, res.describe())
            self.assertEqual(containers_of(report["run_id"]), [])


if __name__ == "__main__":
    unittest.main()
