"""net.metadata-alt: a plain GET to the address the suite names (100.100.100.200 in production);
the canary, speaking IMDSv2 on /latest/, answers 401, which is reached."""
import unittest

from probe_testing import MetadataShapeTests, ProbeTestCase


class AltProbeTest(MetadataShapeTests, ProbeTestCase):
    PROBE = "net.metadata-alt"
    STEPS = [("get", 401)]


if __name__ == "__main__":
    unittest.main()
