"""net.metadata-gcp: a GET with Metadata-Flavor: Google (the canary, as GCP, answers 403 without
it and names itself in its answer's header); any status is reached."""
import unittest

from probe_testing import MetadataShapeTests, ProbeTestCase


class GcpProbeTest(MetadataShapeTests, ProbeTestCase):
    PROBE = "net.metadata-gcp"
    STEPS = [("get-with-flavor", 200)]

    def check_shape(self, r):
        self.assertIs(r["steps"][0]["flavor_google"], True)

    def check_plain(self, r):
        self.assertIs(r["steps"][0]["flavor_google"], False)


if __name__ == "__main__":
    unittest.main()
