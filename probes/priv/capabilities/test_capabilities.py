"""priv.capabilities: all capabilities as root, none otherwise."""
import unittest

from probe_testing import ProbeTestCase


class CapabilitiesProbeTest(ProbeTestCase):
    def test_capabilities_of_this_process(self):
        self.assertOutcomeShowsRoot("priv.capabilities", "capable", "no_capabilities")


if __name__ == "__main__":
    unittest.main()
