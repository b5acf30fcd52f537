"""net.policy-named-port: the policy_field checks (TCP pairs)."""
import unittest

from probe_testing import PolicyFieldTests, ProbeTestCase


class PolicyNamedPortTest(PolicyFieldTests, ProbeTestCase):
    PROBE, FIELD, PROTO = "net.policy-named-port", "named port", "tcp"


if __name__ == "__main__":
    unittest.main()
