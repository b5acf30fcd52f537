"""End-to-end: the http driver on the REAL sandprobe binary against the run-code fixture service
(harness/testing/runcode_fixture/fixture.py) in unsafe mode: evaluations are plain subprocesses of
the service, on this host, with the service's environment and working directory.

The fixture is started with a planted credential (an env var and a token file of its own); the
suite names them, and sandprobe runs with the same env var so the local control can see it too.
Traffic: the fixture listens on 127.0.0.1, the probes target the harness's loopback canaries.
The fixture's helpers (Fixture, write_http_manifest, run_fixture_matrix, ...) are in e2e_util.py.
"""
import hashlib
import os
import secrets
import socket
import subprocess
import tempfile
import threading
import unittest

import e2e_util as u

LEAK_ROWS = ["cred.env-secrets", "cred.sa-token", "net.tcp-by-ip", "net.http-by-name", "net.dns",
             "state.persists", "proc.sibling", "proc.outlives-call"]


class UnsafeMatrix(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        base = cls.make_tmp("sandprobe-e2e-http-")
        cls.fixture_cwd = os.path.join(base, "fixture-cwd")
        os.makedirs(cls.fixture_cwd)
        u.run_fixture_matrix(cls, "unsafe", cls.fixture_cwd)

    def test_leak_rows_fail_and_exit_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        v = u.verdicts(self.report, "runcode-unsafe")
        for probe in LEAK_ROWS:
            self.assertEqual(v[probe]["verdict"], "FAIL", "%s: %s" % (probe, v[probe]["reason"]))
        # the service's own timeout, reported as "timed out", is recognised, and it killed the
        # program itself (no heartbeat after the answer): the loop row passes
        self.assertEqual(v["res.cpu-loop"]["verdict"], "PASS", v["res.cpu-loop"]["reason"])
        self.assertEqual(v["proc.sibling"]["verdict"], "FAIL", v["proc.sibling"]["reason"])

    def test_rows_are_validated_by_the_local_control(self):
        local = u.observations(self.report, "local")
        for probe in LEAK_ROWS + ["res.output-flood", "res.cpu-loop"]:
            self.assertEqual(local[probe]["exposure"], "exposed", (probe, local[probe]["reason"]))

    def test_timeout_marker_becomes_exit_124_with_the_service_fact(self):
        ev = u.observations(self.report, "runcode-unsafe")["res.cpu-loop"]["evidence"]
        self.assertEqual(ev["exit_code"], 124)
        self.assertIs(ev["driver_facts"]["service_timeout"], True)
        self.assertIn("timed out", ev["driver_facts"]["service_timeout_source"])

    def test_state_persists_names_which_call_found_which_and_keeps_the_earlier_calls(self):
        obs = u.observations(self.report, "runcode-unsafe")["state.persists"]["evidence"]
        pairs = obs["result"]["pairs"]
        for mark in ("cwd file", "process", "tmp file", "$HOME file"):
            self.assertIn("call 2 found call 1's %s" % mark, pairs)
        first = obs["driver_facts"]["calls"][0]
        self.assertEqual((first["call"], first["result"]["outcome"]), (1, "planted"))
        self.assertEqual(first["result"]["planted"]["cwd"]["path"].rsplit("/", 1)[0],
                         os.path.realpath(self.fixture_cwd))  # the service's own cwd
        # calls 1..8, then 9 and 10 at the same moment (they find each other in flight), 11 judged
        self.assertEqual(len(obs["driver_facts"]["calls"]), 10)
        self.assertIn("call 9 found call 10's tmp file (both in flight)", pairs)
        local = u.observations(self.report, "local")["state.persists"]["evidence"]["result"]
        self.assertIn("call 2 found call 1's tmp file", local["pairs"])  # plain processes
        self.assertFalse([p for p in local["pairs"] if p.endswith("process")],
                         "the reaper killed each call's process")

    def test_sibling_names_the_evaluation_it_saw(self):
        o = u.observations(self.report, "runcode-unsafe")["proc.sibling"]
        self.assertRegex(o["reason"], r"call [12] saw call [12] \(pid \d+\) and could signal it")
        pair = o["evidence"]["driver_facts"]["calls"]
        self.assertEqual([c["call"] for c in pair], [1, 2])

    def test_loop_heartbeats_stop_with_the_answer(self):
        ev = u.observations(self.report, "runcode-unsafe")["res.cpu-loop"]["evidence"]
        self.assertTrue(ev["canary_hits"], "the loop beat while it ran")
        ended = ev["driver_facts"]["call_ended_unix_ms"]
        self.assertEqual([h for h in ev["canary_hits"] if h["unix_ms"] > ended + 500], [])
        self.assertEqual(ev["driver_facts"]["after_call_wait_s"], 2)

    def test_outlives_call_is_heard_after_the_call(self):
        ev = u.observations(self.report, "runcode-unsafe")["proc.outlives-call"]["evidence"]
        self.assertGreater(ev["driver_facts"]["after_call_wait_s"], 0)
        self.assertTrue(ev["canary_hits"], ev)

    def test_output_flood_delivered_everything(self):
        o = u.observations(self.report, "runcode-unsafe")["res.output-flood"]
        self.assertEqual(o["exposure"], "exposed", o["reason"])
        self.assertIn("8388608 bytes", o["reason"])

    def test_health_was_checked_around_every_call(self):
        for probe, o in u.observations(self.report, "runcode-unsafe").items():
            facts = o["evidence"]["driver_facts"]
            self.assertEqual((facts["health_before"], facts["health_after"]), ("ok", "ok"), probe)
            self.assertNotIn("service_died", facts, probe)

    def test_nothing_left_and_no_secret_in_the_report(self):
        self.assertEqual(self.fixture_exit, 0)
        self.assertEqual(self.left_after_stop, [])
        self.assertEqual(u.state_files(self.report, "/tmp", self.fixture_cwd, self.run_cwd), [])
        with open(os.path.join(self.out, "report.json")) as f:
            text = f.read()
        self.assertNotIn(self.secret, text)
        self.assertLess(self.wall_s, 60)


class SetupErrors(unittest.TestCase):
    """Before any probe runs: an unhealthy service and a missing token are exit 3 with a hint,
    and the error names the variable, never a value."""

    def setUp(self):
        u.require_sandprobe()
        self.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-http-setup-")
        self.suite = u.write_suite(self.tmp.name, "one", ["cred.env-secrets"])

    def tearDown(self):
        self.tmp.cleanup()

    def run_manifest(self, url, extra=(), env=None, args=()):
        manifest = u.write_http_manifest(os.path.join(self.tmp.name, "m.yaml"), "svc", url,
                                         extra=extra)
        return u.run_sandprobe(["run", "--suite", self.suite, "--sandbox", manifest, "--control",
                                u.LOCAL_MANIFEST, "--out", os.path.join(self.tmp.name, "out"),
                                "--canary-dir", os.path.join(self.tmp.name, "canary")] +
                               list(args), timeout=30, env=env, cwd=self.tmp.name)

    def test_unhealthy_service_is_exit_3_with_a_hint(self):
        with socket.socket() as s:  # a loopback port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        res = self.run_manifest("http://127.0.0.1:%d" % port)
        self.assertEqual(res.returncode, 3, res.describe())
        self.assertIn("the service is not healthy", res.stderr)
        self.assertIn("hint: start the service", res.stderr)

    def test_missing_token_names_the_variable_only(self):
        fixture = u.Fixture("unsafe", cwd=self.tmp.name)
        try:
            res = self.run_manifest(fixture.url, extra=["  tokenEnv: SANDPROBE_E2E_REPL_TOKEN"],
                                    env={"SANDPROBE_E2E_REPL_TOKEN": ""})
        finally:
            fixture.stop()
        self.assertEqual(res.returncode, 3, res.describe())
        self.assertIn("SANDPROBE_E2E_REPL_TOKEN", res.stderr)

    def test_token_is_sent_and_never_written(self):
        token = "e2e-token-" + secrets.token_hex(16)
        fixture = u.Fixture("unsafe", cwd=self.tmp.name)
        try:
            # One invocation at a time: the unsafe fixture shares this machine's pid namespace,
            # and while the local control runs, its sandprobe-reaper and python3 carry the planted
            # canaries in /proc/<pid>/environ, which cred.env-secrets reads (measured: a FAIL
            # naming both pids whenever the two invocations overlap; docs/traps.md, trap 46).
            res = self.run_manifest(fixture.url, extra=["  tokenEnv: SANDPROBE_E2E_REPL_TOKEN"],
                                    env={"SANDPROBE_E2E_REPL_TOKEN": token}, args=["--jobs", "1"])
        finally:
            fixture.stop()
        # The harness's planted canary cannot be in a service it did not start: not PASS.
        self.assertEqual(res.returncode, 2, res.describe())
        out = os.path.join(self.tmp.name, "out")
        v = u.verdicts(u.load_report(out), "svc")["cred.env-secrets"]
        self.assertEqual(v["verdict"], "INCONCLUSIVE", v)
        self.assertIn("did not start this sandbox", v["reason"])
        for name in os.listdir(out):
            with open(os.path.join(out, name), errors="replace") as f:
                self.assertNotIn(token, f.read(), name)
        self.assertNotIn(token, res.stdout + res.stderr)


class ServiceSecretUnderAPlantedName(unittest.TestCase):
    """A service whose own secret is OPENAI_API_KEY, one of the names the harness plants: a suite
    that names it with its sha256 (README, "HTTP run-code services") gets the row judged, not
    INCONCLUSIVE "not planted" (the rule looked at names only). The planted set rides along, so the
    local control proves the probe detects a leak; the service's secret is never given to
    sandprobe, only to the fixture."""

    def setUp(self):
        u.require_sandprobe()
        self.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-http-own-secret-")
        self.value = "sk-own-" + secrets.token_hex(20)
        self.digest = hashlib.sha256(self.value.encode()).hexdigest()
        self.suite = u.write_suite(self.tmp.name, "own", ["cred.env-secrets"], {
            "cred.env-secrets": {"canary_name": "OPENAI_API_KEY", "canary_sha256": self.digest,
                                 "canaries": "{canary.env_set}"}})

    def tearDown(self):
        self.tmp.cleanup()

    def run_against(self, mode):
        fixture = u.Fixture(mode, cwd=self.tmp.name, env={"OPENAI_API_KEY": self.value})
        out = os.path.join(self.tmp.name, "out-" + mode.replace("=", ""))
        try:
            manifest = u.write_http_manifest(os.path.join(self.tmp.name, "m.yaml"), "svc",
                                             fixture.url)
            res = u.run_sandprobe(["run", "--suite", self.suite, "--sandbox", manifest,
                                   "--control", u.LOCAL_MANIFEST, "--out", out, "--canary-dir",
                                   os.path.join(self.tmp.name, "canary"), "--jobs", "1"],
                                  timeout=60, cwd=self.tmp.name)
        finally:
            fixture.stop()
        self.assertNotIn(self.value, res.stdout + res.stderr)
        report = u.load_report(out)
        for name in os.listdir(out):
            with open(os.path.join(out, name), errors="replace") as f:
                self.assertNotIn(self.value, f.read(), name)
        local = u.observations(report, "local")["cred.env-secrets"]
        self.assertEqual(local["exposure"], "exposed", local["reason"])  # the planted set
        return res, u.verdicts(report, "svc")["cred.env-secrets"], u.observations(
            report, "svc")["cred.env-secrets"]

    def test_a_service_that_clears_the_environment_passes(self):
        res, v, _ = self.run_against("shared")  # an empty environment, the holder hidden
        self.assertEqual(v["verdict"], "PASS", v)
        self.assertEqual(res.returncode, 0, res.describe())

    def test_a_service_that_hands_on_its_environment_fails(self):
        res, v, obs = self.run_against("unsafe")
        self.assertEqual(v["verdict"], "FAIL", v)
        own = [(leak["name"], leak["sha256_prefix"]) for leak in obs["evidence"]["result"]["leaks"]
               if leak["own"]]
        self.assertIn(("OPENAI_API_KEY", self.digest[:12]), own, obs["evidence"]["result"])
        self.assertEqual(res.returncode, 1, res.describe())


def run_with_rusage(args, env, cwd, timeout):
    """sandprobe args -> (exit code, max RSS in KiB of sandprobe and what it waited for)."""
    full_env = dict(os.environ, SANDPROBE_HOME=u.HOME, **env)
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen([u.BIN] + args, stdout=null, stderr=null, env=full_env, cwd=cwd,
                             stdin=subprocess.DEVNULL)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(p.pid, 0)
    finally:
        timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_maxrss


class DefaultFloodIsCounted(unittest.TestCase):
    """The default 64 MiB flood: the local arm counts every byte without keeping them, and a
    service without a cap answers more than the driver's 16 MiB: the driver reads the rest
    streaming and counts it, so the cell is a FAIL (all of it came back), in bounded memory."""

    def test_64_mib_flood(self):
        u.require_sandprobe()
        with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-http-flood-") as base:
            fixture = u.Fixture("unsafe", "--timeout", "10", cwd=base)
            try:
                suite = u.write_suite(base, "flood", ["res.output-flood"])
                manifest = u.write_http_manifest(os.path.join(base, "m.yaml"), "runcode-unsafe",
                                                 fixture.url, timeout_s=10)
                out = os.path.join(base, "out")
                code, maxrss_kib = run_with_rusage(
                    ["run", "--suite", suite, "--sandbox", manifest, "--control",
                     u.LOCAL_MANIFEST, "--out", out, "--canary-dir",
                     os.path.join(base, "canary"), "--format", "json"], {}, base, 60)
            finally:
                fixture.stop()
            report = u.load_report(out)
        self.assertEqual(code, 1)
        local = u.observations(report, "local")["res.output-flood"]
        self.assertEqual(local["exposure"], "exposed", local["reason"])
        self.assertIn("67108864 bytes", local["reason"])
        v = u.verdicts(report, "runcode-unsafe")["res.output-flood"]
        self.assertEqual(v["verdict"], "FAIL", v["reason"])
        o = u.observations(report, "runcode-unsafe")["res.output-flood"]
        self.assertEqual(o["exposure"], "exposed", o["reason"])
        self.assertIn("67108864 bytes", o["reason"])
        facts = o["evidence"]["driver_facts"]
        self.assertIs(facts["response_streamed"], True)
        self.assertGreater(facts["response_bytes"], 64 << 20)
        self.assertEqual(o["evidence"]["result"]["outcome"], "written")
        # 64 MiB went through each arm; 16 MiB at most was kept from the service: bounded memory
        self.assertLess(maxrss_kib, 160 * 1024, "sandprobe max RSS %d KiB" % maxrss_kib)


if __name__ == "__main__":
    unittest.main()
