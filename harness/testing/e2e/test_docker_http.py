"""End-to-end: the http driver on the REAL sandprobe binary against the run-code fixture service
in isolated mode on the REAL Docker daemon: each evaluation runs in a fresh container with the
docker-hardened HostConfig (manifests/docker/hardened.yaml), image sandprobe-probe:local. The same
rows that FAIL through the unsafe fixture (test_http.py) must PASS here, validated by the local
control, and no container or process may be left. Fails loudly, never skips, without the daemon
or the image. Traffic: 127.0.0.1 only (the containers have no network at all).
"""
import json
import os
import sys
import urllib.parse
import unittest

import e2e_util as u
from test_docker import engine, require_docker


def fixture_containers():
    flt = json.dumps({"label": ["sandprobe.fixture"]})
    return engine("/containers/json?all=1&filters=" + urllib.parse.quote(flt))


class IsolatedMatrix(u.RunCase):
    @classmethod
    def setUpClass(cls):
        require_docker()
        u.require_sandprobe()
        base = cls.make_tmp("sandprobe-e2e-docker-http-")
        u.run_fixture_matrix(cls, "isolated", base)

    def test_every_row_passes_and_exit_0(self):
        self.assertEqual(self.res.returncode, 0, self.res.describe())
        v = u.verdicts(self.report, "runcode-isolated")
        self.assertEqual(sorted(v), sorted(u.MATRIX_ROWS + ["res.cpu-loop"]))
        for probe, verdict in v.items():
            self.assertEqual(verdict["verdict"], "PASS", "%s: %s" % (probe, verdict["reason"]))
            self.assertEqual(verdict["validated_by"], "local", probe)

    def test_state_and_outlives_rows_say_what_they_rest_on(self):
        obs = u.observations(self.report, "runcode-isolated")
        state = obs["state.persists"]["evidence"]
        self.assertEqual(state["result"]["outcome"], "fresh")
        self.assertEqual(state["driver_facts"]["calls"][0]["result"]["outcome"], "planted")
        self.assertIn("tmp", state["driver_facts"]["calls"][0]["result"]["made"])
        outlives = obs["proc.outlives-call"]
        self.assertEqual((outlives["exposure"], outlives["evidence"]["canary_hits"]),
                         ("contained", []))
        self.assertIn("nothing reached the canary", outlives["reason"])

    def test_output_was_cut_by_the_service(self):
        o = u.observations(self.report, "runcode-isolated")["res.output-flood"]
        self.assertEqual(o["exposure"], "contained", o["reason"])
        self.assertIn("output cut", o["reason"])
        self.assertLessEqual(o["evidence"]["stdout_bytes"], 1 << 20)  # the fixture's cap
        self.assertEqual(o["evidence"]["driver_facts"]["health_after"], "ok")

    def test_the_fixture_used_the_hardened_set(self):
        sys.path.insert(0, os.path.dirname(u.FIXTURE))
        try:
            import fixture
        finally:
            sys.path.pop(0)
        hc = fixture.hardened_host_config()
        self.assertEqual((hc["NetworkMode"], hc["ReadonlyRootfs"], hc["Tmpfs"], hc["CapDrop"],
                          hc["PidsLimit"], hc["Memory"]),
                         ("none", True, {"/tmp": "size=32m,noexec"}, ["ALL"], 64, 268435456))

    def test_nothing_left(self):
        self.assertEqual(self.fixture_exit, 0)
        self.assertEqual(fixture_containers(), [])
        self.assertEqual(self.left_after_stop, [])
        self.assertEqual(u.state_files("/tmp", self.run_cwd), [])
        self.assertLess(self.wall_s, 60)


if __name__ == "__main__":
    unittest.main()
