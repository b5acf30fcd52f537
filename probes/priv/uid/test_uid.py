"""priv.uid: uid 0 is root, any other unprivileged."""
import unittest

from probe_testing import ProbeTestCase


class UidProbeTest(ProbeTestCase):
    def test_uid_of_this_process(self):
        self.assertOutcomeShowsRoot("priv.uid", "root", "unprivileged")


if __name__ == "__main__":
    unittest.main()
