"""net.policy-ipblock-except: the policy_field checks (UDP pairs)."""
import unittest

from probe_testing import PolicyFieldTests, ProbeTestCase


class PolicyIpblockExceptTest(PolicyFieldTests, ProbeTestCase):
    PROBE, FIELD, PROTO = "net.policy-ipblock-except", "ipBlock except", "udp"


if __name__ == "__main__":
    unittest.main()
