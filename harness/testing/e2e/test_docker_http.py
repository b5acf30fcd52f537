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
import test_http_designs as designs
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
        self.assertEqual(u.state_files(self.report, "/tmp", self.run_cwd), [])
        self.assertLess(self.wall_s, 90)


class ExecDesign(u.RunCase):
    """fixture.py --mode exec: one long-lived hardened container (user 65534) for the whole
    service, every evaluation through the Engine API's exec as root. The privilege rows must
    report the evaluated process's own facts (uid 0), not the container's configuration; the
    evaluations share one /tmp and one PID namespace."""

    ARM = "runcode-exec"

    @classmethod
    def setUpClass(cls):
        require_docker()
        u.require_sandprobe()
        cls.during = []
        cls.rows = dict(designs.ROWS)
        cls.rows.update({"priv.capabilities": None, "priv.no-new-privs": None})
        designs.run_design(cls, "exec", rows=cls.rows, while_fixture_runs=lambda: cls.during.extend(
            engine("/containers/%s/json" % c["Id"]) for c in fixture_containers()))

    def verdict(self, probe):
        v = u.verdicts(self.report, self.ARM)[probe]
        return v["verdict"], v["reason"]

    def test_uid_row_reports_the_execd_process_not_the_container(self):
        self.assertEqual(self.verdict("priv.uid")[0], "FAIL", self.verdict("priv.uid"))
        result = u.observations(self.report, self.ARM)["priv.uid"]["evidence"]["result"]
        self.assertEqual(result["uid"], [0, 0, 0])
        self.assertEqual(len(self.during), 1, "one long-lived container for the service")
        self.assertEqual(self.during[0]["Config"]["User"], "65534:65534")

    def test_the_rest_of_the_hardening_reaches_the_execd_process(self):
        for probe in ("priv.capabilities", "priv.no-new-privs", "res.cpu-loop"):
            self.assertEqual(self.verdict(probe)[0], "PASS", (probe, self.verdict(probe)))

    def test_evaluations_share_state_and_see_each_other(self):
        self.assertEqual(self.verdict("state.persists")[0], "FAIL")
        self.assertIn("call 2 found call 1's tmp file", self.verdict("state.persists")[1])
        self.assertEqual(self.verdict("proc.sibling")[0], "FAIL", self.verdict("proc.sibling"))

    def test_nothing_left(self):
        self.assertEqual(self.fixture_exit, 0)
        self.assertEqual(fixture_containers(), [])
        self.assertEqual(self.left_after_stop, [])
        self.assertEqual(u.state_files(self.report, "/tmp", self.run_cwd), [])


if __name__ == "__main__":
    unittest.main()
