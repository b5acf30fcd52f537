"""net.k8s-api: the target from the service environment over TLS, no target at all, TLS to a
plain HTTP server, a target given by name, and a refusal on loopback."""
import os
import unittest

from probe_testing import ProbeTestCase, http_canary, run_probe


class K8sApiProbeTest(ProbeTestCase):
    def test_k8s_api_from_service_env_over_tls(self):
        c = self.canary(http_canary(canary=False, tls=True))
        env = dict(os.environ, KUBERNETES_SERVICE_HOST="127.0.0.1",
                   KUBERNETES_SERVICE_PORT=str(c.port))
        r = run_probe("net.k8s-api", {"target": "", "scheme": "https", "timeout_s": 2},
                      env=env).result
        self.assertEqual((r["outcome"], r["status"], r["target_source"], r["target"]),
                         ("reached", 404, "env", "127.0.0.1:%d" % c.port))

    def test_k8s_api_without_target(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        r = run_probe("net.k8s-api", {"target": "", "scheme": "http", "timeout_s": 2},
                      env=env).result
        self.assertEqual((r["outcome"], r["evidence"]), ("no_target", "absence"))

    def test_k8s_api_tls_to_a_plain_http_server_is_no_reply(self):
        c = self.canary(http_canary())
        r = run_probe("net.k8s-api", {"target": c.target, "scheme": "https",
                                      "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["connected"]),
                         ("no_reply", "absence", "SSLError", True))

    def test_k8s_api_by_name_is_resolved_first(self):
        # localhost comes from /etc/hosts: a name, resolved with the probe's deadline, no DNS sent.
        c = self.canary(http_canary())
        r = run_probe("net.k8s-api", {"target": "localhost:%d" % c.port, "scheme": "http",
                                      "timeout_s": 2}).result
        self.assertEqual(r["outcome"], "reached", r)
        self.assertIn("127.0.0.1", r["addresses"])

    def test_refused_on_loopback_is_blocked(self):
        self.assertRefusedOnLoopbackIsBlocked("net.k8s-api", "target", scheme="http")


if __name__ == "__main__":
    unittest.main()
