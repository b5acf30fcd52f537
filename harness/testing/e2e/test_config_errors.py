"""End-to-end: one mistake in a manifest or a suite is one error naming file, line, column and
field (with "did you mean" when a known name is near), from `sandprobe validate` (exit 3) and from
`sandprobe run`, which refuses it with exit 3 before any probe runs (no report is written).
Every driver's section, the common fields, limits and suite entries. Several mistakes in one file
are each an error of `validate`, found in one pass; `run` names the first and how many more.
Nothing here contacts a daemon or a cluster: every error is found on load.
"""
import os
import re
import tempfile
import unittest

import e2e_util as u

DOCKER = "name: d\ndriver: docker\ncontrol: local\ndocker:\n  image: sandprobe-probe:local\n"
KUBE = ("name: k\ndriver: kubernetes\ncontrol: local\nkubernetes:\n"
        "  image: registry.example/probe@sha256:" + "0" * 64 + "\n")
HTTP = "name: h\ndriver: http\ncontrol: local\nhttp:\n  url: http://127.0.0.1:9/execute\n"
SUITE = "name: s\ndescription: one mistake\nprobes:\n"

# (name, kind, text, field named in the error, suggestion expected or None)
CASES = [
    # common fields and limits
    ("contrl", "manifest", "name: m\ndriver: local\ncontrl: local\n", "contrl", "control"),
    ("nmae", "manifest", "nmae: m\ndriver: local\n", "nmae", "name"),
    ("bad-driver", "manifest", "name: m\ndriver: lokal\n", "driver", None),
    ("limits-key", "manifest", "name: m\ndriver: local\nlimits: {timout: 5s}\n", "limits.timout",
     "timeout"),
    ("limits-value", "manifest", "name: m\ndriver: local\nlimits: {memory: lots}\n",
     "limits.memory", None),
    ("weakens-type", "manifest", "name: m\ndriver: local\nweakens: 3\n", "weakens", None),
    ("limits-huge", "manifest", "name: m\ndriver: local\nlimits: {timeout: 999999999999h}\n",
     "limits.timeout", None),
    ("other-drivers-section", "manifest",
     'name: m\ndriver: local\ncommand: {argv: [bwrap, --unshare-all, python3, -c, "{script}"]}\n',
     "command", "driver: command"),
    # local and command
    ("local-key", "manifest", "name: m\ndriver: local\nlocal: {argvv: [python3]}\n",
     "local.argvv", "argv"),
    ("command-key", "manifest",
     'name: m\ndriver: command\ncontrol: local\ncommand: {argv: [bwrap, "{script}"], '
     "prefligt: [true]}\n", "command.prefligt", "preflight"),
    ("command-no-script", "manifest",
     "name: m\ndriver: command\ncontrol: local\ncommand: {argv: [bwrap, python3]}\n",
     "command.argv", None),
    ("command-stdin-string", "manifest",
     'name: m\ndriver: command\ncontrol: local\ncommand: {argv: [python3], stdin: "true"}\n',
     "command.stdin", None),
    # docker (the issue's two manifests with one mistake each, and more)
    ("docker-envv", "manifest", DOCKER + '  envv: ["A=1"]\n  hostConfig: {NetworkMode: none}\n',
     "docker.envv", None),
    ("docker-hostconfig", "manifest", DOCKER + "  hostconfig: {NetworkMode: none}\n",
     "docker.hostconfig", "hostConfig"),
    ("docker-readonly", "manifest",
     DOCKER + "  hostConfig: {NetworkMode: none, ReadOnlyRootfs: true}\n",
     "docker.hostConfig.ReadOnlyRootfs", "ReadonlyRootfs"),
    ("docker-capdrop", "manifest", DOCKER + "  hostConfig: {CapDrop: ALL}\n",
     "docker.hostConfig.CapDrop", None),
    ("docker-memory", "manifest", DOCKER + "  hostConfig: {Memory: 256m}\n",
     "docker.hostConfig.Memory", None),
    ("docker-tmpfs", "manifest", DOCKER + "  hostConfig: {Tmpfs: [/tmp]}\n",
     "docker.hostConfig.Tmpfs", None),
    ("docker-nested", "manifest", DOCKER + "  hostConfig: {LogConfig: {Typ: none}}\n",
     "docker.hostConfig.LogConfig.Typ", "Type"),
    ("docker-user", "manifest", DOCKER + "  user: 65534\n", "docker.user", None),
    ("docker-empty-limit", "manifest", DOCKER + "  hostConfig: {PidsLimit: }\n",
     "docker.hostConfig.PidsLimit", None),
    ("docker-short-typo", "manifest", DOCKER + "  hostConfig: {Pids: 64}\n",
     "docker.hostConfig.Pids", "PidsLimit"),
    ("docker-no-image", "manifest", "name: d\ndriver: docker\ncontrol: local\ndocker: {}\n",
     "docker.image", None),
    # kubernetes
    ("kube-key", "manifest", KUBE + "  namespce: sandprobe\n", "kubernetes.namespce",
     "namespace"),
    ("kube-namespace", "manifest", KUBE + "  namespace: Bad_NS\n", "kubernetes.namespace", None),
    ("kube-aged", "manifest", KUBE + "  agedRerun: -5s\n", "kubernetes.agedRerun", None),
    ("kube-policy-age", "manifest", KUBE + "  minPolicyAge: 5s\n", "kubernetes.minPolicyAge",
     None),
    ("kube-template", "manifest",
     KUBE + "  jobTemplate:\n    spec:\n      template:\n        spec:\n"
     "          containerz: []\n", "kubernetes.jobTemplate.spec.template.spec.containerz",
     "containers"),
    ("kube-security", "manifest",
     KUBE + "  jobTemplate:\n    spec:\n      template:\n        spec:\n"
     "          securityContex: {}\n", "kubernetes.jobTemplate.spec.template.spec.securityContex",
     "securityContext"),
    ("kube-empty-security", "manifest",
     KUBE + "  jobTemplate:\n    spec:\n      template:\n        spec:\n"
     "          containers:\n            - name: probe\n              securityContext:\n",
     "kubernetes.jobTemplate.spec.template.spec.containers[0].securityContext", None),
    # http
    ("http-key", "manifest", HTTP + "  presett: code-json\n", "http.presett", "preset"),
    ("http-response", "manifest", HTTP + "  preset: code-json\n  response: {stdot: /out}\n",
     "http.response.stdot", "stdout"),
    ("http-timeout", "manifest", HTTP + "  preset: code-json\n  timeout: {pointr: /e}\n",
     "http.timeout.pointr", "pointer"),
    ("http-url", "manifest",
     "name: h\ndriver: http\ncontrol: local\nhttp: {url: ftp://x/, preset: code-json}\n",
     "http.url", None),
    # suites
    ("suite-key", "suite", SUITE + "  - id: net.dns\n    parms: {server: x}\n",
     "probes[0].parms", "params"),
    ("suite-level", "suite", SUITE + "  - id: net.dns\n    levl: advisory\n", "probes[0].levl",
     "level"),
    ("suite-top", "suite", "name: s\ndescrption: x\nprobes: [net.dns]\n", "descrption",
     "description"),
    ("suite-probes-type", "suite", "name: s\ndescription: x\nprobes: net.dns\n", "probes", None),
    ("suite-probe-id", "suite", SUITE + "  - net.dnss\n", "probes[0].id", "net.dns"),
    ("suite-param-name", "suite", SUITE + "  - id: net.dns\n    params: {sever: x}\n",
     "probes[0].params.sever", "server"),
]

ERROR = re.compile(r"^error  (?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<field>\S+): (?P<msg>.*)$")


class OneMistakeOneError(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-config-")
        d = cls.tmp.name
        cls.good_suite = u.write_suite(d, "good", ["cred.env-secrets"])
        cls.paths = {}
        for name, _, text, _, _ in CASES:
            path = os.path.join(d, name + ".yaml")
            with open(path, "w") as f:
                f.write(text)
            cls.paths[name] = path

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_there_are_at_least_30_cases_across_every_driver_and_suites(self):
        self.assertGreaterEqual(len(CASES), 30)
        text = "".join(c[2] for c in CASES)
        for driver in ("local", "command", "docker", "kubernetes", "http"):
            self.assertIn("driver: %s" % driver, text)
        self.assertGreaterEqual(sum(1 for c in CASES if c[1] == "suite"), 4)

    def test_validate_gives_exactly_one_error_naming_file_line_column_and_field(self):
        for name, _, _, field, suggestion in CASES:
            with self.subTest(case=name):
                path = self.paths[name]
                r = u.run_sandprobe(["validate", path], timeout=30, cwd=self.tmp.name)
                self.assertEqual(r.returncode, 3, r.describe())
                errors = [line for line in r.stdout.splitlines() if line.startswith("error")]
                self.assertEqual(len(errors), 1, r.stdout)
                m = ERROR.match(errors[0])
                self.assertIsNotNone(m, errors[0])
                self.assertEqual((m["file"], m["field"]), (path, field), errors[0])
                self.assertGreater(int(m["line"]), 0)
                self.assertGreater(int(m["col"]), 0)
                if suggestion:
                    self.assertIn("did you mean %s?" % suggestion, m["msg"])

    def test_run_refuses_each_with_exit_3_before_any_probe(self):
        for name, kind, _, field, _ in CASES:
            with self.subTest(case=name):
                out = os.path.join(self.tmp.name, "out-" + name)
                suite, sandbox = ((self.paths[name], u.LOCAL_MANIFEST) if kind == "suite"
                                  else (self.good_suite, self.paths[name]))
                r = u.run_sandprobe(["run", "--suite", suite, "--sandbox", sandbox, "--control",
                                     u.LOCAL_MANIFEST, "--out", out],
                                    timeout=30, cwd=self.tmp.name,
                                    env={"KUBECONFIG": os.path.join(self.tmp.name, "none")})
                self.assertEqual(r.returncode, 3, r.describe())
                self.assertIn("%s:" % self.paths[name], r.stderr)
                self.assertIn(field, r.stderr)
                self.assertFalse(os.path.exists(os.path.join(out, "report.json")), name)

    def test_control_by_the_name_the_matrix_shows(self):
        path = os.path.join(self.tmp.name, "by-name.yaml")
        with open(path, "w") as f:
            f.write(DOCKER.replace("control: local", "control: docker-open"))
        r = u.run_sandprobe(["validate", path], timeout=30, cwd=self.tmp.name)
        self.assertEqual(r.returncode, 0, r.describe())
        self.assertIn("control " + os.path.join(u.MANIFESTS, "docker", "open.yaml"), r.stdout)


class EveryMistakeInOnePass(unittest.TestCase):
    """`validate` goes on past a mistake: a misspelt key no longer hides the next one."""

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-all-errors-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def errors(self, r):
        found = []
        for line in r.stdout.splitlines():
            if line.startswith("error"):
                m = ERROR.match(line)
                self.assertIsNotNone(m, line)
                found.append((m["file"], int(m["line"]), int(m["col"]), m["field"], m["msg"]))
        return found

    def test_validate_lists_both_mistakes_of_the_issues_manifest(self):
        # docker.imag on line 5 hid docker.hostConfig.Memmory two lines below.
        bad = self.write("two.yaml", DOCKER.replace("  image:", "  imag:") +
                         "  hostConfig:\n    Memmory: 268435456\n")
        good = self.write("good.yaml", DOCKER)
        r = u.run_sandprobe(["validate", good, bad], timeout=30, cwd=self.tmp.name)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("ok     %s (manifest" % good, r.stdout)
        self.assertEqual([e[:4] for e in self.errors(r)],
                         [(bad, 5, 3, "docker.imag"), (bad, 7, 5, "docker.hostConfig.Memmory")],
                         r.stdout)
        msgs = [e[4] for e in self.errors(r)]
        self.assertIn("did you mean image?", msgs[0])
        self.assertIn("did you mean Memory?", msgs[1])
        # run refuses the file on its first mistake and says there is one more.
        r = u.run_sandprobe(["run", "--suite", u.write_suite(self.tmp.name, "s", ["net.dns"]),
                             "--sandbox", bad, "--control", u.LOCAL_MANIFEST,
                             "--out", os.path.join(self.tmp.name, "out")],
                            timeout=30, cwd=self.tmp.name)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertIn("%s:5:3: docker.imag:" % bad, r.stderr)
        self.assertIn("(and 1 more mistake in this file: `sandprobe validate %s`" % bad, r.stderr)

    def test_validate_lists_every_bad_entry_of_a_suite(self):
        bad = self.write("suite.yaml", SUITE + "  - id: net.dns\n    parms: {server: x}\n"
                         "  - net.dnss\n")
        r = u.run_sandprobe(["validate", bad], timeout=30, cwd=self.tmp.name)
        self.assertEqual(r.returncode, 3, r.describe())
        self.assertEqual([e[:4] for e in self.errors(r)],
                         [(bad, 5, 5, "probes[0].parms"), (bad, 6, 5, "probes[1].id")], r.stdout)


if __name__ == "__main__":
    unittest.main()
