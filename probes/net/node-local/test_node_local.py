"""net.node-local: each node address x target pair tried, only an answer counts (an HTTP status
over TLS or plain, the echo canary's nonce), the report names which pair answered; refusals
everywhere are held (positive); no node address is no_target."""
import os
import socket
import unittest

from probe_testing import ProbeTestCase, free_port, http_canary, run_probe, tcp_canary


def node_env(address="127.0.0.1"):
    env = dict(os.environ)
    env.pop("SANDPROBE_NODE_IP", None)
    if address:
        env["SANDPROBE_NODE_IP"] = address
    return env


class NodeLocalProbeTest(ProbeTestCase):
    def test_answers_are_reached_and_named(self):
        api = self.canary(http_canary(tls=True))
        echo = self.canary(tcp_canary())
        closed = free_port()
        targets = ["api-server=%d/https" % api.port, "host-canary=%d/echo" % echo.port,
                   "kubelet-read-only=%d/http" % closed]
        r = run_probe("net.node-local", {"targets": targets, "timeout_s": 1},
                      env=node_env()).result
        self.assertEqual((r["outcome"], r["evidence"]), ("reached", "positive"), r)
        # Per address, the pairs that answered in port order, each with how it answered.
        answers = sorted([(api.port, "api-server:%d (HTTP 200)" % api.port),
                          (echo.port, "host-canary:%d (echo)" % echo.port)])
        self.assertEqual(r["detail"], "answered: 127.0.0.1 " + ", ".join(a for _, a in answers))
        self.assertNotIn("kubelet-read-only", r["detail"])
        answered = {p["name"]: p["answered"] for p in r["pairs"]}
        self.assertEqual(answered, {"api-server": True, "host-canary": True,
                                    "kubelet-read-only": False})
        self.assertEqual(r["addresses"], ["127.0.0.1"])  # the gateway only when asked

    def test_refused_everywhere_is_held_with_absence_evidence(self):
        # A closed port refuses as a policy's REJECT does: the control decides, not the errno.
        targets = ["api-server=%d/https" % free_port(), "kubelet=%d/http" % free_port()]
        r = run_probe("net.node-local", {"targets": targets, "timeout_s": 1},
                      env=node_env()).result
        self.assertEqual((r["outcome"], r["evidence"]), ("held", "absence"), r)
        self.assertEqual({p["errno"] for p in r["pairs"]}, {"ECONNREFUSED"})

    def test_a_listener_that_never_answers_is_not_reached(self):
        with socket.create_server(("127.0.0.1", 0)) as mute:  # accepts, says nothing
            targets = ["kubelet=%d/http" % mute.getsockname()[1]]
            r = run_probe("net.node-local", {"targets": targets, "timeout_s": 1},
                          env=node_env()).result
        self.assertEqual((r["outcome"], r["evidence"]), ("held", "absence"), r)
        self.assertIs(r["pairs"][0]["connected"], True)

    def test_no_node_address_is_no_target(self):
        r = run_probe("net.node-local", {"timeout_s": 1}, env=node_env(None)).result
        self.assertEqual(r["outcome"], "no_target", r)

    def test_an_arm_family_picks_the_node_address_of_that_family(self):
        # kubernetes.ipFamily: every node address (status.hostIPs) and the family to pick by.
        with socket.create_server(("::1", 0), family=socket.AF_INET6) as mute:
            port = mute.getsockname()[1]
            env = dict(node_env("127.0.0.1,::1"), SANDPROBE_IP_FAMILY="IPv6")
            r = run_probe("net.node-local", {"targets": ["kubelet=%d/http" % port],
                                             "timeout_s": 1}, env=env).result
        self.assertEqual((r["addresses"], r["family"]), (["::1"], "IPv6"), r)
        self.assertIs(r["pairs"][0]["connected"], True)  # it went to ::1, and only there
        env["SANDPROBE_IP_FAMILY"] = "IPv4"
        r = run_probe("net.node-local", {"targets": ["kubelet=%d/http" % free_port()],
                                         "timeout_s": 1}, env=env).result
        self.assertEqual(r["addresses"], ["127.0.0.1"], r)
        # A node without an address of the family: nothing to try, unknown, and it says why.
        env.update(SANDPROBE_NODE_IP="127.0.0.1", SANDPROBE_IP_FAMILY="IPv6")
        r = run_probe("net.node-local", {"timeout_s": 1}, env=env).result
        self.assertEqual(r["outcome"], "no_target", r)
        self.assertIn("of family IPv6", r["detail"])

    def test_an_address_connect_refuses_as_invalid_is_no_hold(self):
        # A link-local address without its scope: connect() fails with EINVAL, nothing is sent.
        r = run_probe("net.node-local", {"targets": ["kubelet=10250/http"], "timeout_s": 1},
                      env=node_env("fe80::1")).result
        self.assertEqual((r["outcome"], r["errno"]), ("error", "EINVAL"), r)
        self.assertIn("nothing was sent to kubelet fe80::1:10250", r["detail"])

    def test_a_malformed_target_is_an_error(self):
        r = run_probe("net.node-local", {"targets": ["kubelet=10250/ssh"]},
                      env=node_env()).result
        self.assertEqual((r["outcome"], r["errno"]), ("error", "EINVAL"), r)


if __name__ == "__main__":
    unittest.main()
