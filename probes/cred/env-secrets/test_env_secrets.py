"""cred.env-secrets: the canary variable is recognised by its hash and never printed."""
import hashlib
import os
import secrets
import unittest

from probe_testing import run_probe

SECRET = "sandprobe-test-secret-" + secrets.token_hex(16)


class EnvSecretsProbeTest(unittest.TestCase):
    def test_env_secret_present_but_never_printed(self):
        env = dict(os.environ, SANDPROBE_CANARY_TOKEN=SECRET)
        params = {"canary_name": "SANDPROBE_CANARY_TOKEN",
                  "canary_sha256": hashlib.sha256(SECRET.encode()).hexdigest()}
        run = run_probe("cred.env-secrets", params, env=env)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_matches"]),
                         ("present", "positive", True))
        self.assertIn("SANDPROBE_CANARY_TOKEN", r["secret_like_names"])
        self.assertGreaterEqual(r["env_count"], len(env))  # (a pyenv shim adds its own)
        self.assertNotIn(SECRET, run.stdout + run.stderr)

    def test_env_secret_absent_or_different(self):
        params = {"canary_name": "SANDPROBE_CANARY_TOKEN", "canary_sha256": "00" * 32}
        env = {k: v for k, v in os.environ.items() if k != "SANDPROBE_CANARY_TOKEN"}
        r = run_probe("cred.env-secrets", params, env=env).result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_name_present"]),
                         ("absent", "positive", False))
        run = run_probe("cred.env-secrets", params, env=dict(env, SANDPROBE_CANARY_TOKEN="x"))
        self.assertEqual((run.result["outcome"], run.result["canary_name_present"],
                          run.result["canary_matches"]), ("absent", True, False))


if __name__ == "__main__":
    unittest.main()
