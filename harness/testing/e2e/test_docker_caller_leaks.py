"""E2E on the real daemon: the caller's keyrings, abstract and pathname unix sockets and inherited
descriptors against docker-hardened and one weakness at a time (Engine API driver, runc).

  docker-hardened       manifests/docker/hardened.yaml                        -> every row PASS
  dk-host-network       NetworkMode host: the host's abstract unix sockets     -> abstract FAIL
  dk-root-unconfined    root without the seccomp filter: keyctl can link the host root's user
                        keyring (user keyrings are per user namespace, and runc shares the
                        host's) into the container's own session keyring     -> keyring FAIL
  dk-canary-folder      a read-only bind of the canary folder (a host folder holding a socket)
                                                                             -> unix-sockets FAIL
fs.inherited-fds has no weakened Docker variant: a container's process is started by runc under
containerd-shim, not by the caller, and Docker has no way to pass it a descriptor (podman's
--preserve-fds has no Docker twin); every variant PASSes it. Controls: local (validates every
row) and docker-open.
"""
import os
import tempfile
import unittest

import e2e_util as u
from test_caller_leaks import PARAMS, ROWS
from test_docker import containers_of, require_docker
from test_docker_weakened import hardened_with


class DockerCallerLeaks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_docker()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-dk-leaks-")
        base = cls.tmp.name
        canary_dir = os.path.join(base, "canary")
        os.makedirs(canary_dir)
        os.chmod(base, 0o755)  # uid 65534 in the container walks down to the socket
        os.chmod(canary_dir, 0o755)
        cls.variants = {
            "docker-hardened": ({}, None, set()),
            "dk-host-network": ({"NetworkMode": "host"}, None, {"net.abstract-unix"}),
            "dk-root-unconfined": ({"SecurityOpt": "[no-new-privileges, seccomp=unconfined]"},
                                   "0:0", {"cred.keyring"}),
            "dk-canary-folder": ({"Binds": '["%s:%s:ro"]' % (canary_dir, canary_dir)}, None,
                                 {"fs.unix-sockets"}),
        }
        suite = u.write_suite(base, "dk-caller-leaks", ROWS, PARAMS)
        args = ["run", "--suite", suite, "--out", os.path.join(base, "out"),
                "--canary-dir", canary_dir, "--jobs", "4",
                "--control", u.LOCAL_MANIFEST,
                "--control", os.path.join(u.MANIFESTS, "docker", "open.yaml")]
        for name, (changes, user, _) in cls.variants.items():
            path = os.path.join(base, name + ".yaml")
            with open(path, "w") as f:
                f.write(hardened_with(name, changes, (), user))
            args += ["--sandbox", path]
        cls.res = u.run_sandprobe(args, timeout=200)
        cls.report = u.report_or_none(os.path.join(base, "out"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_each_weakness_fails_exactly_its_row(self):
        self.assertIsNotNone(self.report, self.res.describe())
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        for name, (_, _, fail) in self.variants.items():
            got = u.verdicts(self.report, name)
            for probe in ROWS:
                with self.subTest(candidate=name, probe=probe):
                    self.assertEqual(got[probe]["verdict"], "FAIL" if probe in fail else "PASS",
                                     got[probe]["reason"])

    def test_what_the_hardened_container_shows(self):
        cand = u.observations(self.report, "docker-hardened")
        # The default seccomp profile refuses keyctl outright: positive containment.
        self.assertEqual(cand["cred.keyring"]["evidence"]["result"]["outcome"], "no_keyctl")
        self.assertEqual(cand["fs.inherited-fds"]["evidence"]["result"]["count"], 0)
        self.assertIs(cand["net.abstract-unix"]["evidence"]["driver_facts"]["canary_listening"],
                      True)
        for probe in ROWS:
            with self.subTest(probe=probe):
                self.assertEqual(cand[probe]["evidence_kind"], "positive", cand[probe]["reason"])

    def test_failures_rest_on_proof(self):
        obs = lambda arm, probe: u.observations(self.report, arm)[probe]
        keyring = obs("dk-root-unconfined", "cred.keyring")["evidence"]["result"]
        users = [k for k in keyring["keys"] if k["read"] and k["read"]["canary"]]
        self.assertEqual([k["description"].rsplit(":", 1)[1] for k in users], ["user"], keyring)
        for arm, probe, kind in (("dk-host-network", "net.abstract-unix", "abstract-unix"),
                                 ("dk-canary-folder", "fs.unix-sockets", "unix")):
            with self.subTest(arm=arm):
                hits = obs(arm, probe)["evidence"]["canary_hits"]
                self.assertEqual([h["kind"] for h in hits], [kind])

    def test_nothing_left(self):
        self.assertEqual(containers_of(self.report["run_id"]), [])


if __name__ == "__main__":
    unittest.main()
