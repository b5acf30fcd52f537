"""End-to-end: net.sibling on a lab network whose bridge drops container-to-container traffic
(Docker's enable_icc=false): the pair scans its own /24, reaches nothing, and the row PASSes
(validated by the local control, whose two calls meet on loopback). Its counterpart, the shared
lab network where the pair meets and the row FAILs, is dk-default-network in
test_docker_weakened. The network is --internal, made and removed by this test; the canaries
bind its gateway, so every packet stays on it or on loopback."""
import os
import subprocess
import tempfile
import unittest

import e2e_util as u
from test_docker import require_docker

NETWORK = "sandprobe-e2e-noicc"
SUBNET, GATEWAY = "172.30.98.0/24", "172.30.98.1"
MANIFEST = """name: docker-noicc
driver: docker
control: %s
description: the probe image on an --internal network without inter-container traffic
docker:
  image: sandprobe-probe:local
  hostConfig:
    NetworkMode: %s
""" % (os.path.join(u.MANIFESTS, "local.yaml"), NETWORK)


def docker(*args, check=True):
    return subprocess.run(["docker"] + list(args), capture_output=True, text=True, check=check)


class NoInterContainerTraffic(u.RunCase):
    @classmethod
    def setUpClass(cls):
        require_docker()
        docker("network", "rm", NETWORK, check=False)  # a leftover of a killed run
        docker("network", "create", "--internal", "--subnet", SUBNET, "-o",
               "com.docker.network.bridge.enable_icc=false", NETWORK)
        try:
            base = cls.make_tmp("sandprobe-e2e-noicc-")
            manifest = os.path.join(base, "noicc.yaml")
            with open(manifest, "w") as f:
                f.write(MANIFEST)
            suite = u.write_suite(base, "sibling", ["net.sibling"],
                                  {"net.sibling": {"allow": ["127.0.0.0/8", "{canary.host}/24"]}})
            cls.run_once(["--suite", suite, "--sandbox", manifest, "--control", u.LOCAL_MANIFEST,
                          "--canary-bind", GATEWAY], timeout=120)
        finally:
            docker("network", "rm", NETWORK, check=False)

    def test_the_pair_scanned_its_subnet_reached_nothing_and_passes(self):
        v = u.verdicts(self.report, "docker-noicc")["net.sibling"]
        self.assertEqual((v["verdict"], v["validated_by"]), ("PASS", "local"), v["reason"])
        r = u.observations(self.report, "docker-noicc")["net.sibling"]["evidence"]["result"]
        self.assertEqual(r["outcome"], "isolated", r)
        self.assertEqual(r["subnets"], [["127.0.0.1/32", SUBNET]] * 2)
        self.assertEqual(r["candidates"], [255, 255])
        self.assertEqual(self.res.returncode, 0, self.res.describe())

    def test_the_network_is_gone(self):
        self.assertNotEqual(docker("network", "inspect", NETWORK, check=False).returncode, 0)


if __name__ == "__main__":
    unittest.main()
