"""net.docker-api: the HTTP canary's Docker Engine API flavour (/_ping with Api-Version,
/version, as the harness's docker canary answers) is a daemon that answers, plain and over TLS; a
plain HTTP server is not; a refusal on loopback and bubblewrap's own network namespace block; the
discovered gateway is asked only when gateway_ports opts in."""
import unittest

from lab_netns import GATEWAY, LabNetns
from probe_testing import ProbeTestCase, free_port, http_canary, run_in_bwrap, run_probe


class DockerApiProbeTest(ProbeTestCase):
    def test_an_engine_api_answers_with_its_version(self):
        c = self.canary(http_canary(docker=True))
        run = run_probe("net.docker-api", {"targets": [c.target]})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["api_version"]),
                         ("daemon_answers", "positive", "1.41"), r)
        self.assertEqual(c.hits, ["%s %s" % (run.nonce, run.invocation)] * 2)
        self.assertEqual(c.requests, [("GET", "/_ping", "docker"), ("GET", "/version", "docker")])

    def test_over_tls_without_checking_the_certificate(self):
        c = self.canary(http_canary(tls=True, docker=True))
        r = run_probe("net.docker-api", {"targets": ["https://" + c.target]}).result
        self.assertEqual((r["outcome"], r["api_version"]), ("daemon_answers", "1.41"), r)

    def test_an_http_server_without_an_api_version_is_not_a_daemon(self):
        c = self.canary(http_canary())
        r = run_probe("net.docker-api", {"targets": [c.target]}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("not_docker", "absence"), r)

    def test_refused_on_loopback_is_blocked(self):
        r = run_probe("net.docker-api", {"targets": ["127.0.0.1:%d" % free_port()]}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("blocked", "positive", "ECONNREFUSED"))

    def test_no_target_sends_nothing(self):
        r = run_probe("net.docker-api", {"targets": []}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("no_target", "absence"))

    def test_the_discovered_gateway_is_asked_only_when_gateway_ports_opts_in(self):
        with LabNetns() as ns:
            port = ns.echo_canary(GATEWAY)  # a TCP service that is no Docker API
            off = run_probe("net.docker-api", {"targets": []}, prefix=ns.prefix).result
            on = run_probe("net.docker-api", {"targets": [], "gateway_ports": [port, 2376]},
                           prefix=ns.prefix).result
        self.assertEqual((off["outcome"], off["gateways"]), ("no_target", [GATEWAY]))
        self.assertEqual([(a["target"], a["outcome"]) for a in on["asked"]],
                         [("%s:%d" % (GATEWAY, port), "no_reply"),
                          ("https://%s:2376" % GATEWAY, "refused")])
        self.assertEqual(on["outcome"], "no_reply")

    def test_own_network_namespace_blocks_the_canary(self):
        c = self.canary(http_canary(docker=True))
        r = run_in_bwrap("net.docker-api", {"targets": [c.target]}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("blocked", "positive"))
        self.assertEqual(c.hits, [])


if __name__ == "__main__":
    unittest.main()
