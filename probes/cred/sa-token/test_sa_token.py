"""cred.sa-token: a readable token file is described by length and hash prefix, never printed."""
import hashlib
import os
import secrets
import tempfile
import unittest

from probe_testing import run_probe

SECRET = "sandprobe-test-secret-" + secrets.token_hex(16)


class SaTokenProbeTest(unittest.TestCase):
    def test_token_file_readable_reports_length_and_prefix_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            canary = os.path.join(tmp, "token")
            with open(canary, "w") as f:
                f.write(SECRET)
            run = run_probe("cred.sa-token", {"paths": [os.path.join(tmp, "missing")],
                                              "canary_path": canary})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_readable"]),
                         ("readable", "positive", True))
        self.assertEqual(r["canary"]["length"], len(SECRET))
        self.assertEqual(r["canary"]["sha256_prefix"],
                         hashlib.sha256(SECRET.encode()).hexdigest()[:12])
        self.assertEqual(r["files"][0]["errno"], "ENOENT")
        self.assertNotIn(SECRET, run.stdout + run.stderr)

    def test_token_file_missing_is_positive_evidence(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_probe("cred.sa-token", {"paths": [os.path.join(tmp, "missing"),
                                                      os.path.join(tmp, "f", "token")],
                                            "canary_path": ""}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["canary_readable"]),
                         ("unreadable", "positive", "ENOENT", False))


if __name__ == "__main__":
    unittest.main()
