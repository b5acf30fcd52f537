"""cred.env-secrets: the canary variables are recognised by their hash wherever the script can
read an environment (its own, another process's /proc/<pid>/environ) and never printed."""
import hashlib
import os
import secrets
import subprocess
import unittest

from probe_testing import BWRAP, run_probe

SECRET = "sandprobe-test-secret-" + secrets.token_hex(16)
AWS = "sandprobe-test-aws-" + secrets.token_hex(20)
OPENAI = "sandprobe-test-openai-" + secrets.token_hex(20)


def sha(value):
    return hashlib.sha256(value.encode()).hexdigest()


PARAMS = {"canary_name": "SANDPROBE_CANARY_TOKEN", "canary_sha256": sha(SECRET),
          "canaries": "SANDPROBE_CANARY_TOKEN=%s,AWS_SECRET_ACCESS_KEY=%s,OPENAI_API_KEY=%s"
                      % (sha(SECRET), sha(AWS), sha(OPENAI))}
PLANTED = {"SANDPROBE_CANARY_TOKEN": SECRET, "AWS_SECRET_ACCESS_KEY": AWS,
           "OPENAI_API_KEY": OPENAI}


def clean_env():
    return {k: v for k, v in os.environ.items() if k not in PLANTED}


class EnvSecretsProbeTest(unittest.TestCase):
    def assert_never_printed(self, run):
        for value in PLANTED.values():
            self.assertNotIn(value, run.stdout + run.stderr)

    def test_env_secret_present_but_never_printed(self):
        env = dict(os.environ, SANDPROBE_CANARY_TOKEN=SECRET)
        params = {"canary_name": "SANDPROBE_CANARY_TOKEN", "canary_sha256": sha(SECRET)}
        run = run_probe("cred.env-secrets", params, env=env)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_matches"], r["primary_matches"]),
                         ("present", "positive", True, True))
        self.assertIn("SANDPROBE_CANARY_TOKEN", r["secret_like_names"])
        self.assertEqual(r["own_env_matches"], ["SANDPROBE_CANARY_TOKEN"])
        own = [l for l in r["leaks"] if l["own"]]
        self.assertEqual(own, [{"pid": own[0]["pid"], "comm": "self",
                                "name": "SANDPROBE_CANARY_TOKEN", "own": True, "kind": "planted",
                                "length": len(SECRET), "sha256_prefix": sha(SECRET)[:12]}])
        self.assertGreaterEqual(r["env_count"], len(env))  # (a pyenv shim adds its own)
        self.assert_never_printed(run)

    def test_every_planted_name_is_reported_by_name_length_and_hash(self):
        run = run_probe("cred.env-secrets", PARAMS, env=dict(clean_env(), **PLANTED))
        r = run.result
        self.assertEqual(r["outcome"], "present")
        self.assertEqual(r["canary_names"], sorted(PLANTED))
        self.assertEqual(r["own_env_matches"], sorted(PLANTED))
        for leak in (l for l in r["leaks"] if l["own"]):
            self.assertEqual(leak["length"], len(PLANTED[leak["name"]]))
            self.assertEqual(leak["sha256_prefix"], sha(PLANTED[leak["name"]])[:12])
        self.assertEqual(r["detail"], "planted canary secret readable: all 3 in its own environment")
        self.assert_never_printed(run)

    def test_env_secret_absent_or_different(self):
        params = {"canary_name": "SANDPROBE_CANARY_TOKEN", "canary_sha256": "00" * 32}
        r = run_probe("cred.env-secrets", params, env=clean_env()).result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_name_present"]),
                         ("absent", "positive", False))
        run = run_probe("cred.env-secrets", params, env=dict(clean_env(), SANDPROBE_CANARY_TOKEN="x"))
        self.assertEqual((run.result["outcome"], run.result["canary_name_present"],
                          run.result["canary_matches"]), ("absent", True, False))

    def test_another_process_environment_is_read(self):
        # A process the script can see carries the canary; the script's own environment does not
        # (as bubblewrap's pid 1 does under --clearenv): the probe names it by pid and comm.
        holder = subprocess.Popen(["sleep", "30"], env=dict(clean_env(), AWS_SECRET_ACCESS_KEY=AWS))
        try:
            run = run_probe("cred.env-secrets", PARAMS, env=clean_env())
        finally:
            holder.kill()
            holder.wait()
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["own_env_matches"]),
                         ("present", "positive", []))
        mine = [l for l in r["leaks"] if l["pid"] == holder.pid]
        self.assertEqual(mine, [{"pid": holder.pid, "comm": "sleep", "name": "AWS_SECRET_ACCESS_KEY",
                                 "own": False, "kind": "planted", "length": len(AWS),
                                 "sha256_prefix": sha(AWS)[:12]}])
        self.assertIn("pid %d (sleep)" % holder.pid, r["detail"])
        self.assertIn({"pid": holder.pid, "comm": "sleep", "env_count": len(clean_env()) + 1},
                      r["other_processes_readable"])
        self.assert_never_printed(run)

    def test_bubblewrap_pid_one_keeps_the_launchers_environment(self):
        # --clearenv empties the sandboxed program's environment only: bubblewrap's own pid 1 in
        # the new pid namespace still carries what bwrap was started with.
        run = run_probe("cred.env-secrets", PARAMS, prefix=BWRAP, python="python3",
                        env=dict(clean_env(), **PLANTED))
        r = run.result
        self.assertEqual((r["outcome"], r["own_env_matches"]), ("present", []), r)
        self.assertEqual({(l["pid"], l["comm"]) for l in r["leaks"]}, {(1, "bwrap")})
        self.assertEqual({l["name"] for l in r["leaks"]}, set(PLANTED))
        self.assert_never_printed(run)

    def test_bubblewrap_started_with_an_empty_environment_contains(self):
        prefix = ["env", "-i", "PATH=/usr/bin:/bin"] + BWRAP
        run = run_probe("cred.env-secrets", PARAMS, prefix=prefix, python="python3",
                        env=dict(clean_env(), **PLANTED))
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["leaks"]), ("absent", "positive", []), r)
        self.assertIn({"pid": 1, "comm": "bwrap", "env_count": 1}, r["other_processes_readable"])
        self.assertIn("1 other process environment", r["detail"])

    def test_a_secret_the_configuration_gives_is_named_as_given(self):
        # given_secrets: what a docker manifest's config.Env hands the container, looked for by
        # name and hash like a planted canary, reported apart from them.
        given = "given-" + secrets.token_hex(16)
        params = dict(PARAMS, given_secrets="GITHUB_TOKEN=%s" % sha(given))
        run = run_probe("cred.env-secrets", params, env=dict(clean_env(), GITHUB_TOKEN=given))
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"]), ("present", "positive"))
        self.assertEqual([(l["name"], l["kind"], l["length"]) for l in r["leaks"] if l["own"]],
                         [("GITHUB_TOKEN", "given", len(given))])
        self.assertIn("GITHUB_TOKEN", r["canary_names"])
        self.assertEqual(r["detail"], "secret its configuration gives the sandbox readable: "
                                      "GITHUB_TOKEN in its own environment")
        self.assertNotIn(given, run.stdout + run.stderr)
        # Another value under the same name is not the given one.
        r = run_probe("cred.env-secrets", params, env=dict(clean_env(), GITHUB_TOKEN="x")).result
        self.assertEqual((r["outcome"], r["leaks"]), ("absent", []))

    def test_no_canary_is_absence_only(self):
        r = run_probe("cred.env-secrets", {"canary_name": "", "canaries": "", "given_secrets": ""},
                      env=clean_env()).result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_names"]), ("absent", "absence", []))


if __name__ == "__main__":
    unittest.main()
