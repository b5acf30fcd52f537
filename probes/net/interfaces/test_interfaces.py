"""net.interfaces: the names of this network namespace, from the kernel rather than /sys."""
import os
import socket
import unittest

from probe_testing import run_in_bwrap, run_probe


class InterfacesProbeTest(unittest.TestCase):
    def test_interfaces_match_the_namespace(self):
        r = run_probe("net.interfaces", {}).result
        self.assertEqual(r["names"], [n for _, n in socket.if_nameindex()])
        self.assertEqual(r["count"], len(r["names"]))
        self.assertIn(r["outcome"], ("loopback_only", "other_interfaces"))

    def test_interfaces_loopback_only_even_when_sys_shows_the_host(self):
        r = run_in_bwrap("net.interfaces", {}).result
        self.assertEqual((r["outcome"], r["evidence"], r["names"]),
                         ("loopback_only", "positive", ["lo"]))
        # Trap 9 (docs/traps.md): with the host's /sys bind-mounted, /sys/class/net lists the
        # host's devices.
        r = run_in_bwrap("net.interfaces", {}, extra=["--ro-bind", "/sys", "/sys"]).result
        self.assertEqual((r["outcome"], r["names"]), ("loopback_only", ["lo"]))
        self.assertEqual(r["sys_class_net"], sorted(os.listdir("/sys/class/net")))


if __name__ == "__main__":
    unittest.main()
