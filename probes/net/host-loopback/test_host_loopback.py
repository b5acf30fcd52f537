"""net.host-loopback: the loopback-only canary's echo is reached; in bubblewrap's own network
namespace 127.0.0.1 is another loopback (refused: blocked, positive); addresses outside `allow`
are never contacted."""
import unittest

from probe_testing import ProbeTestCase, run_in_bwrap, run_probe, tcp_canary


def port_of(canary):
    return int(canary.target.rsplit(":", 1)[1])


class HostLoopbackProbeTest(ProbeTestCase):
    def test_the_host_loopback_echo_is_reached(self):
        c = self.canary(tcp_canary())
        run = run_probe("net.host-loopback", {"port": port_of(c), "gateways": ["127.0.0.1"]})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"]), ("reached", "positive"), r)
        self.assertEqual(r["tried"][0]["address"], "127.0.0.1")
        self.assertEqual(c.hits, ["SANDPROBE %s %s" % (run.nonce, run.invocation)])

    def test_addresses_outside_allow_are_never_tried(self):
        # 10.0.2.2 and the default gateway are outside the default allow (loopback only), and
        # localhost comes from /etc/hosts.
        c = self.canary(tcp_canary())
        r = run_probe("net.host-loopback", {
            "port": port_of(c), "gateways": ["10.0.2.2", "default-gateway", "localhost"],
            "allow": ["127.0.0.0/8"]}).result
        self.assertEqual(r["outcome"], "reached", r)
        self.assertEqual([t["address"] for t in r["tried"]], ["127.0.0.1"])
        self.assertIn({"via": "10.0.2.2", "address": "10.0.2.2", "why": "outside allow"},
                      r["not_tried"])
        self.assertEqual({t["via"] for t in r["not_tried"]} - {"10.0.2.2", "default-gateway"},
                         set())

    def test_an_address_off_every_network_of_the_sandbox_is_never_tried(self):
        # 10.0.2.2 inside allow, but routed through a router here (no link route to it).
        c = self.canary(tcp_canary())
        r = run_probe("net.host-loopback", {"port": port_of(c), "gateways": ["10.0.2.2"],
                                            "allow": ["10.0.2.0/24"]}).result
        self.assertEqual((r["outcome"], r["tried"]), ("no_target", []))
        self.assertEqual(r["not_tried"], [{"via": "10.0.2.2", "address": "10.0.2.2",
                                           "why": "not on a network of this sandbox"}])

    def test_nothing_inside_allow_is_no_target(self):
        r = run_probe("net.host-loopback", {"port": 9, "gateways": ["10.0.2.2"],
                                            "allow": ["127.0.0.0/8"]}).result
        self.assertEqual((r["outcome"], r["tried"]), ("no_target", []))

    def test_an_own_network_namespace_is_blocked_with_proof(self):
        c = self.canary(tcp_canary())
        r = run_in_bwrap("net.host-loopback", {"port": port_of(c), "timeout_s": 1}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("blocked", "positive", "ECONNREFUSED"), r)
        self.assertEqual(c.hits, [])


if __name__ == "__main__":
    unittest.main()
