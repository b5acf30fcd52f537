"""E2E: the lateral-movement rows on real bubblewrap, one run with two candidates
against the local control: bubblewrap.yaml (its own network namespace: every row PASSes) and the
same argv with --share-net (the host's network: every row FAILs). Targets are the harness's
loopback canaries (the TCP echo and the Docker API canary); the sibling pair tries loopback only.
"""
import os
import unittest

import e2e_util as u


class SharedAndOwnNetwork(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-lateral-")
        argv = u.manifest_argv(u.BWRAP_MANIFEST)
        argv.insert(argv.index("--unshare-all") + 1, "--share-net")
        shared = u.write_manifest(os.path.join(base, "shared.yaml"), "bwrap-share-net", argv,
                                  control=u.LOCAL_MANIFEST, limits={"tmp": "32Mi"},
                                  description="bubblewrap.yaml with --share-net")
        suite = u.write_suite(base, "lateral", u.LATERAL_ROWS)
        cls.run_once(["--suite", suite, "--sandbox", u.BWRAP_MANIFEST, "--sandbox", shared,
                      "--control", u.LOCAL_MANIFEST] + u.FAST_FLAGS, timeout=90)

    def test_exit_code_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())

    def test_own_network_namespace_passes_every_row(self):
        for probe, v in u.verdicts(self.report, "bubblewrap").items():
            self.assertEqual((v["verdict"], v["validated_by"]), ("PASS", "local"),
                             "%s: %s" % (probe, v["reason"]))
        self.assertEqual(sorted(u.verdicts(self.report, "bubblewrap")), sorted(u.LATERAL_ROWS))
        obs = u.observations(self.report, "bubblewrap")
        for probe in ("net.gateway", "net.docker-api"):
            self.assertEqual(obs[probe]["evidence"]["canary_hits"], [], probe)
            self.assertEqual(obs[probe]["evidence"]["result"]["errno"], "ECONNREFUSED", probe)
        sib = obs["net.sibling"]["evidence"]["result"]
        self.assertEqual(sib["outcome"], "isolated", sib)
        self.assertGreater(sib["overlap_s"], 0.5)  # in flight together: absence means something

    def test_shared_network_fails_every_row_with_proof(self):
        for probe, v in u.verdicts(self.report, "bwrap-share-net").items():
            self.assertEqual(v["verdict"], "FAIL", "%s: %s" % (probe, v["reason"]))
        obs = u.observations(self.report, "bwrap-share-net")
        kinds = {p: sorted({h["kind"] for h in obs[p]["evidence"]["canary_hits"]})
                 for p in ("net.gateway", "net.docker-api")}
        self.assertEqual(kinds, {"net.gateway": ["tcp"], "net.docker-api": ["docker"]})
        self.assertEqual(obs["net.docker-api"]["evidence"]["result"]["api_version"], "1.41")
        sib = obs["net.sibling"]["evidence"]["result"]
        self.assertEqual(sib["outcome"], "sibling_reached", sib)
        self.assertIn("reached call", sib["detail"])
        self.assertIn("127.0.0.1", sib["detail"])

    def test_the_control_is_exposed_on_every_row(self):
        obs = u.observations(self.report, "local")
        for probe in u.LATERAL_ROWS:
            self.assertEqual(obs[probe]["exposure"], "exposed",
                             "%s: %s" % (probe, obs[probe]["reason"]))


if __name__ == "__main__":
    unittest.main()
