"""E2E: cred.env-secrets reads every environment the sandbox can see, not only its own.

One run, one row, the local control and four candidates: the shipped bubblewrap.yaml and
bubblewrap-bounded.yaml, and each as it was before `env -i` led its argv. There bwrap's pid 1 in
the sandbox keeps the environment bwrap was started with (the harness's planted canaries
included) while --clearenv empties the program's own: the probe must read it in /proc/1/environ
and FAIL the row, naming the process and every planted variable, never a value.
"""
import os
import re
import unittest

import e2e_util as u

PLANTED = ["SANDPROBE_CANARY_API_TOKEN", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY",
           "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "CI_JOB_TOKEN"]
ENV_PREFIX = ["env", "-i", "PATH=/usr/bin:/bin"]


class LauncherEnvironment(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-env-leak-")
        args = ["--suite", u.write_suite(base, "env", ["cred.env-secrets"]),
                "--control", u.LOCAL_MANIFEST, "--sandbox", u.BWRAP_MANIFEST,
                "--sandbox", u.BOUNDED_MANIFEST]
        for name, shipped, limits in [("bwrap-before-env-i", u.BWRAP_MANIFEST, {"tmp": "32Mi"}),
                                      ("bounded-before-env-i", u.BOUNDED_MANIFEST,
                                       {"timeout": "10s", "memory": "256Mi", "tmp": "32Mi",
                                        "pids": 64})]:
            argv = u.manifest_argv(shipped)
            assert argv[:3] == ENV_PREFIX, argv
            path = u.write_manifest(os.path.join(base, name + ".yaml"), name, argv[3:],
                                    control=u.LOCAL_MANIFEST, limits=limits,
                                    description="%s without env -i (as shipped before)" %
                                    os.path.basename(shipped))
            args += ["--sandbox", path]
        cls.run_once(args, timeout=90)

    def leak_of(self, arm):
        return u.observations(self.report, arm)["cred.env-secrets"]["evidence"]["result"]

    def test_exit_code_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())

    def test_control_shows_every_planted_variable_in_its_own_environment(self):
        r = self.leak_of("local")
        self.assertEqual(r["outcome"], "present")
        self.assertEqual(r["own_env_matches"], sorted(PLANTED))
        self.assertEqual(r["canary_names"], sorted(PLANTED))

    def test_lines_without_env_i_fail_on_bwraps_pid_1(self):
        for arm in ["bwrap-before-env-i", "bounded-before-env-i"]:
            with self.subTest(arm=arm):
                v = u.verdicts(self.report, arm)["cred.env-secrets"]
                self.assertEqual(v["verdict"], "FAIL", v["reason"])
                r = self.leak_of(arm)
                self.assertEqual(r["own_env_matches"], [], "--clearenv empties the program's")
                self.assertEqual({(l["pid"], l["comm"]) for l in r["leaks"]}, {(1, "bwrap")})
                self.assertEqual(sorted(l["name"] for l in r["leaks"]), sorted(PLANTED))
                for leak in r["leaks"]:
                    self.assertRegex(leak["sha256_prefix"], r"^[0-9a-f]{12}$")
                    self.assertGreater(leak["length"], 20)
                self.assertEqual(r["detail"], "planted canary secret readable: all 6 in pid 1 "
                                              "(bwrap)")

    def test_shipped_lines_pass_validated_by_the_control(self):
        for arm in ["bubblewrap", "bubblewrap-bounded"]:
            with self.subTest(arm=arm):
                v = u.verdicts(self.report, arm)["cred.env-secrets"]
                self.assertEqual((v["verdict"], v["validated_by"]), ("PASS", "local"), v["reason"])
                r = self.leak_of(arm)
                self.assertEqual((r["leaks"], r["proc_error"]), ([], None))
                # The probe did read pid 1's environment: bwrap's, emptied by env -i but for
                # PATH and the PWD that the keyring shell (dash) exports before it execs bwrap.
                self.assertIn({"pid": 1, "comm": "bwrap", "env_count": 2},
                              r["other_processes_readable"])

    def test_no_value_in_any_output(self):
        # Planted values are "spk_" + 32 or 40 random hex characters; only names and hash
        # prefixes may appear.
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name), encoding="utf-8") as f:
                self.assertIsNone(re.search(r"spk_[0-9a-f]{32}", f.read()), name)


if __name__ == "__main__":
    unittest.main()
