"""net.policy-peer-and: the policy_field checks (TCP pairs)."""
import unittest

from probe_testing import PolicyFieldTests, ProbeTestCase


class PolicyPeerAndTest(PolicyFieldTests, ProbeTestCase):
    PROBE, FIELD, PROTO = "net.policy-peer-and", "namespaceSelector AND podSelector", "tcp"


if __name__ == "__main__":
    unittest.main()
