"""E2E: the hostile output corpus (harness/testing/hostile/) through every other driver.

The same cases and checks as test_hostile_corpus.py (bubblewrap), one sandprobe run per driver:
  docker-cli     the command driver running `docker run` (manifests/docker/cli-hardened.yaml)
  docker-runc    the Docker Engine API driver, runc (manifests/docker/hardened.yaml)
  docker-gvisor  the Docker Engine API driver, gVisor runsc (manifests/docker/gvisor.yaml)
  http           the http driver vs the run-code fixture in isolated mode (a container per call)
The kubernetes driver runs the same corpus on the real cluster (test_cluster_nodes.HostileCorpus).
The heavy cases (10^6 lines, one 64 MiB line) run on docker-runc and docker-gvisor (and
bubblewrap), run_corpus.HEAVY_DRIVERS. Needs the running dockerd and sandprobe-probe:local
(fails, never skips). Candidates run without network; the control is local.
"""
import unittest

from test_hostile_corpus import CorpusCase


class Drivers(CorpusCase):
    DRIVERS = ("docker-cli", "docker-runc", "docker-gvisor", "http")

    def test_docker_cli(self):
        self.check_driver("docker-cli")

    def test_docker_engine_api_runc(self):
        self.check_driver("docker-runc")

    def test_docker_engine_api_gvisor(self):
        self.check_driver("docker-gvisor")

    def test_http_runcode_fixture(self):
        self.check_driver("http")


if __name__ == "__main__":
    unittest.main()
