"""cred.cloud-metadata: each cloud's credential path asked as that cloud wants it; what answers
is reported by length and sha256 prefix only (the planted credential never in the output); a
metadata service without credentials, a refusal on loopback and bubblewrap are contained; no
target, no traffic."""
import hashlib
import os
import pwd
import resource
import unittest

from probe_testing import (DEBIAN_PYTHON, ProbeTestCase, cloud_credential, free_port,
                           http_canary, new_ids, run_in_bwrap, run_probe)

PROBE = "cred.cloud-metadata"


class CloudMetadataProbeTest(ProbeTestCase):
    def test_the_canary_credential_is_found_and_never_printed(self):
        c = self.canary(http_canary())
        c6 = self.canary(http_canary(bind="::1"))
        nonce, invocation = new_ids()
        secret = cloud_credential(nonce)
        run = run_probe(PROBE, {"targets": [c.target, "", c6.target], "timeout_s": 2,
                                "canary_sha256": hashlib.sha256(secret.encode()).hexdigest()},
                        ids=(nonce, invocation))
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_match"]),
                         ("credentials", "positive", True), r)
        self.assertNotIn(secret, run.stdout + run.stderr)
        self.assertNotIn("sandprobe-canary-role", run.stdout)  # a role name is never recorded
        prefix = hashlib.sha256(secret.encode()).hexdigest()[:12]
        for target in (c.target, c6.target):
            got = {(f["shape"], f["what"], f["field"]): f for f in r["findings"]
                   if f["target"] == target}
            self.assertEqual(sorted(got), [("aws", "keys", "SecretAccessKey"),
                                           ("aws", "role list", "body"),
                                           ("azure", "token", "access_token"),
                                           ("gcp", "token", "access_token")])
            for key in [("aws", "keys", "SecretAccessKey"), ("azure", "token", "access_token"),
                        ("gcp", "token", "access_token")]:
                self.assertEqual((got[key]["length"], got[key]["sha256_prefix"],
                                  got[key]["canary_match"]), (40, prefix, True), key)
            self.assertEqual(got[("aws", "role list", "body")]["roles"], 1)
        # The canary served its credential three times per target (hit kind "credential"); the
        # Alibaba role list without an AWS token was refused (401).
        for canary in (c, c6):
            self.assertEqual(sorted(k for _, _, k in canary.requests).count("credential"), 3)
            self.assertEqual(set(canary.hits), {"%s %s" % (nonce, invocation)})
        self.assertIn(("alibaba-roles", 401), [(s["step"], s["status"]) for s in r["steps"]])
        self.assertNotIn(secret, r["detail"])
        self.assertIn("the planted canary", r["detail"])

    def test_a_metadata_service_without_credentials_is_contained(self):
        c = self.canary(http_canary(canary=False))
        r = run_probe(PROBE, {"targets": [c.target], "timeout_s": 2, "canary_sha256": ""}).result
        self.assertEqual((r["outcome"], r["evidence"], r["findings"]),
                         ("no_credentials", "positive", []))
        self.assertIn("token 404", r["detail"])

    def test_refused_on_loopback_is_unreachable(self):
        target = "127.0.0.1:%d" % free_port()
        r = run_probe(PROBE, {"targets": [target], "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("unreachable", "positive", "ECONNREFUSED"))

    def test_no_target_sends_nothing(self):
        r = run_probe(PROBE, {"targets": ["", ""]}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("no_target", "absence"))

    def test_a_thread_limit_asks_inline(self):
        # RLIMIT_NPROC 1 for a non-root uid (bubblewrap-bounded's prlimit --nproc, counted over
        # the whole uid): no thread starts, every shape is asked one after the other.
        self.assertEqual(os.geteuid(), 0, "needs root to become nobody (CI runs as root)")
        c = self.canary(http_canary())
        nobody = pwd.getpwnam("nobody")

        def drop():
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
        r = run_probe(PROBE, {"targets": [c.target], "timeout_s": 2, "canary_sha256": ""},
                      preexec_fn=drop, python=DEBIAN_PYTHON).result
        self.assertEqual((r["outcome"], r["asked_inline"]), ("credentials", 4), r)
        self.assertEqual(len(r["findings"]), 4)

    def test_bubblewrap_cannot_reach_the_canary(self):
        c = self.canary(http_canary())
        self.assertEqual(run_probe(PROBE, {"targets": [c.target]}).result["outcome"],
                         "credentials")
        heard = len(c.hits)
        r = run_in_bwrap(PROBE, {"targets": [c.target], "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("unreachable", "positive"), r)
        self.assertEqual(len(c.hits), heard)


if __name__ == "__main__":
    unittest.main()
