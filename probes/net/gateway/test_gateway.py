"""net.gateway: the TCP echo canary at a target is reached; the gateway found in /proc/net/route
is reported and contacted only when gateway_ports opts in (in a network namespace the test made,
whose gateway is a veth address); no target sends nothing; bubblewrap's own namespace blocks."""
import unittest

from lab_netns import GATEWAY, LabNetns
from probe_testing import ProbeTestCase, free_port, run_in_bwrap, run_probe, tcp_canary


class GatewayProbeTest(ProbeTestCase):
    def test_the_echo_canary_at_a_target_is_reached(self):
        c = self.canary(tcp_canary())
        run = run_probe("net.gateway", {"targets": [c.target]})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"]), ("reached", "positive"), r)
        self.assertEqual(c.hits, ["SANDPROBE %s %s" % (run.nonce, run.invocation)])

    def test_connected_without_an_echo_is_unknown(self):
        c = self.canary(tcp_canary(echo=False))
        r = run_probe("net.gateway", {"targets": [c.target]}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("no_echo", "absence"))

    def test_refused_on_loopback_is_blocked(self):
        r = run_probe("net.gateway", {"targets": ["127.0.0.1:%d" % free_port()]}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("blocked", "positive", "ECONNREFUSED"))

    def test_no_target_sends_nothing_and_reports_the_gateway(self):
        with LabNetns() as ns:
            r = run_probe("net.gateway", {"targets": []}, prefix=ns.prefix).result
        self.assertEqual((r["outcome"], r["gateways"], r["tried"]), ("no_target", [GATEWAY], []))

    def test_the_discovered_gateway_is_contacted_only_when_gateway_ports_opts_in(self):
        with LabNetns() as ns:
            port = ns.echo_canary(GATEWAY)
            off = run_probe("net.gateway", {"targets": []}, prefix=ns.prefix).result
            on = run_probe("net.gateway", {"targets": [], "gateway_ports": [port]},
                           prefix=ns.prefix).result
        self.assertEqual(off["outcome"], "no_target")
        self.assertEqual((on["outcome"], on["evidence"]), ("reached", "positive"), on)
        self.assertEqual(on["tried"][0]["target"], "%s:%d" % (GATEWAY, port))
        self.assertTrue(on["tried"][0]["is_gateway"])

    def test_own_network_namespace_blocks_the_canary(self):
        c = self.canary(tcp_canary())
        r = run_in_bwrap("net.gateway", {"targets": [c.target], "gateway_ports": [c.port]}).result
        self.assertEqual((r["outcome"], r["evidence"], r["gateways"]), ("blocked", "positive", []))
        self.assertEqual(c.hits, [])


if __name__ == "__main__":
    unittest.main()
