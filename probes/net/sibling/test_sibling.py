"""net.sibling as the runner deploys it: calls 1 and 2 at the same moment, then closing call 3
with both results. Processes sharing a network namespace reach each other on loopback; in a
namespace the test made, the connector finds its partner on its own subnet when `allow` admits
it and tries nothing outside its own subnets; a network namespace each (bubblewrap) reaches
nothing; calls that never overlap are not judged."""
import unittest

from lab_netns import LabNetns
from probe_testing import ConcurrentPairTests, ProbeTestCase


class SiblingNetProbeTest(ConcurrentPairTests, ProbeTestCase):
    PROBE = "net.sibling"

    def test_one_network_namespace_reaches_the_other_call_on_loopback(self):
        pair, last = self.run_pair()
        self.assertEqual([r["reached"] for r in pair], ["127.0.0.1", "127.0.0.1"])
        self.assertEqual([r["heard_from"] for r in pair], ["127.0.0.1", "127.0.0.1"])
        self.assertEqual((last["outcome"], last["evidence"]), ("sibling_reached", "positive"))
        self.assertIn("call 1 reached call 2 at 127.0.0.1", last["detail"])

    def test_the_partner_is_found_on_the_own_subnet_that_allow_admits(self):
        with LabNetns() as ns:
            pair, last = self.run_pair(ns.prefix, allow=["10.253.0.0/24"])
        self.assertEqual([r["subnets"] for r in pair], [["10.253.0.0/24"]] * 2)
        self.assertEqual([r["candidates"] for r in pair], [254, 254])  # never 127.0.0.1
        self.assertEqual(last["outcome"], "sibling_reached", last)
        self.assertIn("at 10.253.0.", last["detail"])

    def test_nothing_outside_the_own_subnets_is_tried(self):
        with LabNetns() as ns:
            pair, last = self.run_pair(ns.prefix, allow=["10.0.0.0/8", "192.168.0.0/16"])
        self.assertEqual([(r["subnets"], r["candidates"]) for r in pair],
                         [(["10.253.0.0/24"], 254)] * 2)  # /8 allowed, own /24 tried
        pair, last = self.run_pair(allow=["192.168.0.0/16"])  # not even loopback
        self.assertEqual([r["candidates"] for r in pair], [0, 0])
        self.assertEqual(last["outcome"], "isolated", last)

    def test_a_network_namespace_each_reaches_nothing_while_both_are_in_flight(self):
        wrap = ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent"]
        pair, last = self.run_pair(wrap)
        self.assertEqual([r["listening"] for r in pair], [True, True])
        self.assertEqual((last["outcome"], last["evidence"]), ("isolated", "absence"), last)
        self.assertGreater(last["overlap_s"], 0.5)

    def check_apart(self, first, second):
        self.assertEqual([first["reached"], second["reached"]], [None, None])


if __name__ == "__main__":
    unittest.main()
