"""net.metadata-azure: a GET with Metadata: true and an api-version (the canary, as Azure's IMDS,
answers 400 without them); any status is reached."""
import unittest

from probe_testing import MetadataShapeTests, ProbeTestCase


class AzureProbeTest(MetadataShapeTests, ProbeTestCase):
    PROBE = "net.metadata-azure"
    STEPS = [("get-with-metadata-header", 200)]


if __name__ == "__main__":
    unittest.main()
