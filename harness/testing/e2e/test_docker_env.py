"""End-to-end: cred.env-secrets on the real Docker daemon. A container given a secret-looking
variable FAILs the row, naming the variable and never its value, whichever way it got it:

  dk-config-env     docker-hardened + docker.config.Env [AWS_SECRET_ACCESS_KEY=<random>, ...]
                    (Engine API ContainerConfig.Env; the harness looks for it as a given secret)
  dk-cli-env-copy   docker-cli-hardened + `-e OPENAI_API_KEY -e GITHUB_TOKEN`: the CLI copies
                    the harness's planted canaries from its own environment
  dk-cli-env-value  docker-cli-hardened + `-e CI_JOB_TOKEN=<random>` (a given secret)

while the shipped docker-hardened and docker-cli-hardened PASS it in the same run, validated by
the local control. Probe traffic: none (the row reads environments only)."""
import os
import re
import secrets
import tempfile
import unittest

import e2e_util as u
from test_docker import DOCKER, GATEWAY, containers_of, require_docker

HARDENED = os.path.join(DOCKER, "hardened.yaml")
CLI_HARDENED = os.path.join(DOCKER, "cli-hardened.yaml")
CLI_USER = '--user, "65534:65534",'


def renamed(path, name):
    """The manifest's text under another name, its control named by absolute path."""
    with open(path) as f:
        text = f.read()
    text = re.sub(r"^name: .*$", "name: " + name, text, count=1, flags=re.M)
    return re.sub(r"^control: .*$", "control: " + os.path.join(DOCKER, "open.yaml"), text,
                  count=1, flags=re.M)


class ContainerEnvironment(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_docker()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-docker-env-")
        base = cls.tmp.name
        cls.aws = "e2e-aws-" + secrets.token_hex(20)
        cls.ci = "e2e-ci-" + secrets.token_hex(20)
        config_env = renamed(HARDENED, "dk-config-env") + (
            '  config:\n    Env: ["AWS_SECRET_ACCESS_KEY=%s", "LANG=C.UTF-8"]\n'
            "    Labels: {team: e2e}\n" % cls.aws)
        cli = renamed(CLI_HARDENED, "dk-cli-env-copy")
        assert CLI_USER in cli, "cli-hardened.yaml's argv changed"
        copy = cli.replace(CLI_USER, CLI_USER + " -e, OPENAI_API_KEY, -e, GITHUB_TOKEN,")
        value = renamed(CLI_HARDENED, "dk-cli-env-value").replace(
            CLI_USER, CLI_USER + ' -e, "CI_JOB_TOKEN=%s",' % cls.ci)
        args = ["run", "--suite", u.write_suite(base, "env", ["cred.env-secrets"]),
                "--out", os.path.join(base, "out"), "--canary-dir", os.path.join(base, "canary"),
                "--control", u.LOCAL_MANIFEST, "--control", os.path.join(DOCKER, "open.yaml"),
                "--canary-bind", GATEWAY, "--sandbox", HARDENED, "--sandbox", CLI_HARDENED]
        for name, text in [("dk-config-env", config_env), ("dk-cli-env-copy", copy),
                           ("dk-cli-env-value", value)]:
            path = os.path.join(base, name + ".yaml")
            with open(path, "w") as f:
                f.write(text)
            args += ["--sandbox", path]
        cls.res = u.run_sandprobe(args, timeout=200)
        cls.out = os.path.join(base, "out")
        cls.report = u.report_or_none(cls.out)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.assertIsNotNone(self.report, self.res.describe())

    def verdict(self, arm):
        return u.verdicts(self.report, arm)["cred.env-secrets"]

    def result(self, arm):
        return u.observations(self.report, arm)["cred.env-secrets"]["evidence"]["result"]

    def test_exit_code_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())

    def test_shipped_manifests_pass_validated_by_the_local_control(self):
        for arm in ["docker-hardened", "docker-cli-hardened"]:
            with self.subTest(arm=arm):
                v = self.verdict(arm)
                self.assertEqual((v["verdict"], v["validated_by"]), ("PASS", "local"), v["reason"])
                r = self.result(arm)
                self.assertEqual((r["leaks"], r["proc_error"]), ([], None))
                self.assertGreaterEqual(r["other_processes_readable_count"], 1)  # pid 1: timeout

    def test_config_env_fails_naming_the_variable(self):
        v = self.verdict("dk-config-env")
        self.assertEqual(v["verdict"], "FAIL", v["reason"])
        r = self.result("dk-config-env")
        # The probe's own environment and pid 1 (timeout) both carry it.
        self.assertEqual({(l["name"], l["kind"], l["own"]) for l in r["leaks"]},
                         {("AWS_SECRET_ACCESS_KEY", "given", True),
                          ("AWS_SECRET_ACCESS_KEY", "given", False)})
        for leak in r["leaks"]:
            self.assertEqual(leak["length"], len(self.aws))
        self.assertIn("secret its configuration gives the sandbox readable: "
                      "AWS_SECRET_ACCESS_KEY in its own environment", r["detail"])
        self.assertIn("AWS_SECRET_ACCESS_KEY", r["canary_names"])

    def test_cli_copying_the_callers_variables_fails_on_the_planted_canaries(self):
        v = self.verdict("dk-cli-env-copy")
        self.assertEqual(v["verdict"], "FAIL", v["reason"])
        r = self.result("dk-cli-env-copy")
        self.assertEqual(r["own_env_matches"], ["GITHUB_TOKEN", "OPENAI_API_KEY"])
        self.assertEqual({l["kind"] for l in r["leaks"]}, {"planted"})

    def test_cli_with_a_literal_value_fails_on_the_given_secret(self):
        v = self.verdict("dk-cli-env-value")
        self.assertEqual(v["verdict"], "FAIL", v["reason"])
        r = self.result("dk-cli-env-value")
        self.assertEqual({(l["name"], l["kind"]) for l in r["leaks"] if l["own"]},
                         {("CI_JOB_TOKEN", "given")})

    def test_values_never_reported(self):
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name), encoding="utf-8") as f:
                text = f.read()
            with self.subTest(file=name):
                self.assertNotIn(self.aws, text)
                self.assertNotIn(self.ci, text)
                self.assertIsNone(re.search(r"spk_[0-9a-f]{32}", text))

    def test_nothing_left(self):
        self.assertEqual(containers_of(self.report["run_id"]), [])


if __name__ == "__main__":
    unittest.main()
