"""E2E: the sandprobe command line: exit codes, bad input, list/explain/validate, --format."""
import os
import re
import tempfile
import unittest

import e2e_util as u

NET_ONLY = ["net.metadata", "net.dns", "net.http-by-name", "net.tcp-by-ip", "net.k8s-api",
            "net.interfaces"]
BAD_MANIFESTS = {
    # name: (text, line, field, message fragment)
    "no-script": ('name: no-script\ndriver: command\ncommand:\n  argv: [bwrap, --unshare-all, '
                  'python3, -c]\n', 4, "command.argv", "{script}"),
    "unknown-field": ('name: unknown-field\ndriver: command\nbogus_field: 1\ncommand:\n'
                      '  argv: [python3, -c, "{script}"]\n', 3, "bogus_field", "unknown field"),
    "unknown-nested": ('name: unknown-nested\ndriver: command\ncommand:\n'
                       '  argv: [python3, -c, "{script}"]\n  timeout: 3\n', 5, "command.timeout",
                       "unknown field"),
    "bad-yaml": ('name: bad-yaml\ndriver: command\ncommand:\n  argv: [python3, -c, "{script}"\n'
                 'limits: {timeout: 3s}\n', None, None, "YAML"),
    "bad-limit": ('name: bad-limit\ndriver: command\nlimits: {memory: lots}\ncommand:\n'
                  '  argv: [python3, -c, "{script}"]\n', 3, "limits.memory", ""),
}


class Cli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-cli-")
        self.tmp = self._tmp.name
        self.addCleanup(self._tmp.cleanup)

    def run_args(self, *extra, suite_ids=None, sandbox=None, out=None, timeout=60, env=None):
        out = out or os.path.join(self.tmp, "out")
        args = ["run", "--out", out, "--canary-dir", os.path.join(self.tmp, "canary")]
        if suite_ids is not None:
            args += ["--suite", u.write_suite(self.tmp, "cli", suite_ids)]
        if sandbox is not None:
            args += ["--sandbox", sandbox]
        return u.run_sandprobe(args + list(extra), timeout=timeout, env=env)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # --- malformed input: exit 3, file:line:col and the field -------------------------------

    def test_malformed_manifests_exit_3_with_location(self):
        for name, (text, line, field, fragment) in BAD_MANIFESTS.items():
            with self.subTest(manifest=name):
                path = self.write(name + ".yaml", text)
                out = os.path.join(self.tmp, "out-" + name)
                r = self.run_args(suite_ids=["cred.env-secrets"], sandbox=path, out=out)
                self.assertEqual(r.returncode, 3, r.describe())
                m = re.search(re.escape(path) + r":(\d+):(\d+)", r.stderr)
                self.assertIsNotNone(m, "no %s:line:col in stderr:\n%s" % (path, r.stderr))
                if line is not None:
                    self.assertEqual(int(m.group(1)), line, r.stderr)
                if field is not None:
                    self.assertIn(": %s:" % field, r.stderr)
                self.assertIn(fragment, r.stderr)
                self.assertFalse(os.path.exists(os.path.join(out, "report.json")),
                                 "a report was written although nothing ran")
                self.assertEqual(r.stdout, "", "no matrix for a setup error")

    def test_malformed_suite_exit_3(self):
        path = self.write("suite.yaml", "name: s\nprobes:\n  - id: net.dns\n    levl: advisory\n")
        r = u.run_sandprobe(["run", "--suite", path, "--out", os.path.join(self.tmp, "o"),
                             "--canary-dir", os.path.join(self.tmp, "c")])
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertRegex(r.stderr, re.escape(path) + r":4:\d+: probes\[0\]\.levl: unknown field")

    def test_unknown_probe_in_suite_exit_3(self):
        r = self.run_args(suite_ids=["net.no-such-probe"])
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("net.no-such-probe", r.stderr)

    def test_bad_format_exit_3(self):
        r = self.run_args("--format", "json,csv", suite_ids=["cred.env-secrets"])
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("csv", r.stderr)

    def test_unknown_option_exit_3(self):
        r = u.run_sandprobe(["run", "--no-such-option"])
        self.assertEqual(r.returncode, 3, r.describe())

    # --- validate --------------------------------------------------------------------------

    def test_validate_good_files(self):
        files = [u.BWRAP_MANIFEST, u.BOUNDED_MANIFEST, u.LOCAL_MANIFEST,
                 os.path.join(u.HOME, "suites", "default.yaml"),
                 os.path.join(u.HOME, "suites", "kubernetes-dual-stack.yaml"),
                 os.path.join(u.MANIFESTS, "kubernetes", "deny-egress-ipv6.yaml"),
                 os.path.join(u.HOME, "probes", "net", "dns", "probe.yaml")]
        r = u.run_sandprobe(["validate"] + files)
        self.assertEqual(r.returncode, 0, r.describe())
        for f in files:
            self.assertIn(f, r.stdout)

    def test_validate_bad_files(self):
        for name, (text, line, field, _) in BAD_MANIFESTS.items():
            with self.subTest(manifest=name):
                path = self.write(name + ".yaml", text)
                r = u.run_sandprobe(["validate", u.LOCAL_MANIFEST, path])
                self.assertEqual(r.returncode, 3, r.describe())
                text_out = r.stdout + r.stderr
                self.assertRegex(text_out, re.escape(path) + r":\d+:\d+")
                if field is not None:
                    self.assertIn(field, text_out)
        suite = self.write("s.yaml", "name: s\nprobes: [net.nope]\n")
        r = u.run_sandprobe(["validate", suite])
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("net.nope", r.stdout + r.stderr)

    # --- missing sandbox binary --------------------------------------------------------------

    def test_missing_bwrap_exit_3_with_hint(self):
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        os.symlink(u.python_for_env_i(), os.path.join(bindir, "python3"))  # the local control
        os.symlink("/bin/sh", os.path.join(bindir, "sh"))  # the shell that makes the keyring
        # bubblewrap.yaml starts bwrap through `env -i PATH=/usr/bin:/bin sh -c '... exec "$@"'`:
        # its argv with the PATH env gives bwrap replaced by a directory without it, and once
        # without env at all (the harness's own PATH lacks bwrap).
        argv = u.manifest_argv(u.BWRAP_MANIFEST)
        assert argv[:4] == ["env", "-i", "PATH=/usr/bin:/bin", "sh"] and argv[7] == "bwrap", argv
        cases = {"env-path": (argv[:2] + ["PATH=" + bindir] + argv[3:], None),
                 "bare": (argv[3:], {"PATH": bindir})}
        for name, (line, env) in cases.items():
            with self.subTest(case=name):
                manifest = u.write_manifest(os.path.join(self.tmp, name + ".yaml"), "bubblewrap",
                                            line, control=u.LOCAL_MANIFEST)
                out = os.path.join(self.tmp, "out-" + name)
                r = self.run_args(suite_ids=["cred.env-secrets"], sandbox=manifest, out=out,
                                  env=env)
                self.assertEqual(r.returncode, 3, r.describe())
                self.assertIn("'bwrap'", r.stderr)
                self.assertIn("apt-get install -y bubblewrap", r.stderr)
                self.assertFalse(os.path.exists(os.path.join(out, "report.json")))
                self.assertEqual(os.listdir(os.path.join(self.tmp, "canary")), [])

    # --- exit codes of real runs -----------------------------------------------------------

    def test_network_rows_against_bubblewrap_exit_0(self):
        r = self.run_args(*u.FAST_FLAGS, suite_ids=NET_ONLY)
        self.assertEqual(r.returncode, 0, r.describe())
        report = u.load_report(os.path.join(self.tmp, "out"))
        self.assertEqual({p: v["verdict"] for p, v in u.verdicts(report, "bubblewrap").items()},
                         {p: "PASS" for p in NET_ONLY})
        self.assertIn("exit code 0", r.stdout)

    def test_contained_control_gives_inconclusive_exit_2(self):
        # The control is itself a sandbox: it cannot show exposure, so nothing may PASS.
        r = self.run_args(*u.FAST_FLAGS, "--control", u.BWRAP_MANIFEST, suite_ids=NET_ONLY,
                          sandbox=u.BOUNDED_MANIFEST)
        self.assertEqual(r.returncode, 2, r.describe())
        report = u.load_report(os.path.join(self.tmp, "out"))
        self.assertEqual(u.arm_names(report, "control"), ["bubblewrap"])
        for probe, v in u.verdicts(report, "bubblewrap-bounded").items():
            with self.subTest(probe=probe):
                self.assertEqual(v["verdict"], "INCONCLUSIVE", v["reason"])
                self.assertIn("no control arm showed exposure", v["reason"])
                self.assertEqual(v["validated_by"], "")
        self.assertIn("INCONCLUSIVE", r.stdout)

    def test_control_by_name_never_resolves_to_another_drivers_manifest(self):
        # A copy of the kubernetes deny-egress manifest outside the tree says `control: open`:
        # manifests/docker/open.yaml must not be picked (it was, by directory order).
        with open(os.path.join(u.MANIFESTS, "kubernetes", "deny-egress.yaml")) as f:
            path = self.write("deny-copy.yaml", f.read())
        r = self.run_args(suite_ids=["net.interfaces"], sandbox=path, timeout=60,
                          env={"KUBECONFIG": os.path.join(self.tmp, "no-such-kubeconfig")})
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn(os.path.join("manifests", "kubernetes", "open.yaml"), r.stderr)
        self.assertNotIn(os.path.join("manifests", "docker", "open.yaml"), r.stderr)

    def test_control_by_manifest_name(self):
        # The name the matrix shows (docker-open) finds manifests/docker/open.yaml; a name two
        # manifests share is an error listing both.
        cand = self.write("cand.yaml", "name: cand\ndriver: docker\ncontrol: docker-open\n"
                          "docker: {image: sandprobe-probe:local}\n")
        r = u.run_sandprobe(["validate", cand], timeout=30, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIn("control " + os.path.join(u.MANIFESTS, "docker", "open.yaml"), r.stdout)
        for name in ("twin-a.yaml", "twin-b.yaml"):
            self.write(name, "name: twin\ndriver: docker\ndocker: {image: sandprobe-probe:local}\n")
        cand = self.write("cand2.yaml", "name: cand2\ndriver: docker\ncontrol: twin\n"
                          "docker: {image: sandprobe-probe:local}\n")
        r = u.run_sandprobe(["validate", cand], timeout=30, cwd=self.tmp)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("control 'twin' named by %s is ambiguous" % cand, r.stdout)
        self.assertIn("twin-a.yaml", r.stdout)
        self.assertIn("twin-b.yaml", r.stdout)

    def test_candidate_as_its_own_control_is_a_setup_error(self):
        r = self.run_args("--control", u.BWRAP_MANIFEST, suite_ids=["cred.env-secrets"],
                          sandbox=u.BWRAP_MANIFEST)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("bubblewrap", r.stderr)

    def test_format_json_writes_only_report_json(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_args("--format", "json", *u.FAST_FLAGS, suite_ids=["cred.env-secrets"],
                          out=out)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertEqual(os.listdir(out), ["report.json"])
        self.assertEqual(u.load_report(out)["summary"]["exit_code"], 0)
        self.assertNotIn("secrets in env", r.stdout, "text matrix printed without 'text'")

    # --- list / explain ----------------------------------------------------------------------

    def test_list_shows_every_probe_of_the_tree(self):
        r = u.run_sandprobe(["list"])
        self.assertEqual(r.returncode, 0, r.describe())
        lines = [l for l in r.stdout.splitlines() if l.strip()]
        on_disk = []
        for root, _, files in os.walk(os.path.join(u.HOME, "probes")):
            if "probe.yaml" in files:
                rel = os.path.relpath(root, os.path.join(u.HOME, "probes")).split(os.sep)
                on_disk.append("%s.%s" % (rel[0], rel[1]))
        self.assertGreaterEqual(len(on_disk), 23)
        self.assertEqual(sorted(l.split()[0] for l in lines), sorted(on_disk))
        self.assertLessEqual(set(u.ALL_PROBES), set(on_disk))
        self.assertIn("kubernetes only", [l for l in lines if l.startswith("platform.")][0])

    def test_explain_shows_parameters(self):
        r = u.run_sandprobe(["explain", "net.dns"])
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIn("net.dns", r.stdout)
        self.assertIn("parameters:", r.stdout)
        self.assertRegex(r.stdout, r"\n  server = ")
        self.assertRegex(r.stdout, r"\n  timeout_s = 3")
        self.assertIn("nxdomain", r.stdout)

    def test_explain_unknown_probe_exit_3(self):
        r = u.run_sandprobe(["explain", "net.nope"])
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("net.nope", r.stderr)


if __name__ == "__main__":
    unittest.main()
