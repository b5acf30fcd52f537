"""net.policy-endport: the policy_field checks (TCP pairs)."""
import unittest

from probe_testing import PolicyFieldTests, ProbeTestCase


class PolicyEndportTest(PolicyFieldTests, ProbeTestCase):
    PROBE, FIELD, PROTO = "net.policy-endport", "endPort", "tcp"


if __name__ == "__main__":
    unittest.main()
