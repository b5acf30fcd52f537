"""net.docker-api: an Engine API stand-in (/_ping with Api-Version, /version) is a daemon that
answers, plain and over TLS; a plain HTTP server is not; a refusal on loopback and bubblewrap's
own network namespace block; the discovered gateway is asked only when gateway_ports opts in."""
import json
import ssl
import tempfile
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lab_netns import GATEWAY, LabNetns
from probe_testing import (TEST_KEY_AND_CERT, Canary, ProbeTestCase, free_port, http_canary,
                           run_in_bwrap, run_probe)


def engine_canary(tls=False):
    """Enough of the Docker Engine API, as the harness's docker canary answers it."""
    hits = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append((self.path, self.headers.get("X-Sandprobe", "")))
            if self.path == "/_ping":
                status, body = 200, b"OK"
            elif self.path == "/version":
                status, body = 200, json.dumps({"ApiVersion": "1.41", "Version": "x"}).encode()
            else:
                status, body = 404, b'{"message":"page not found"}'
            self.send_response(status)
            self.send_header("Api-Version", "1.41")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls:
        with tempfile.NamedTemporaryFile("w", suffix=".pem") as pem:
            pem.write(TEST_KEY_AND_CERT)
            pem.flush()
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(pem.name)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    return Canary(server, hits)


class DockerApiProbeTest(ProbeTestCase):
    def test_an_engine_api_answers_with_its_version(self):
        c = self.canary(engine_canary())
        run = run_probe("net.docker-api", {"targets": [c.target]})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["api_version"]),
                         ("daemon_answers", "positive", "1.41"), r)
        tag = "%s %s" % (run.nonce, run.invocation)
        self.assertEqual(c.hits, [("/_ping", tag), ("/version", tag)])

    def test_over_tls_without_checking_the_certificate(self):
        c = self.canary(engine_canary(tls=True))
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
        c = self.canary(engine_canary())
        r = run_in_bwrap("net.docker-api", {"targets": [c.target]}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("blocked", "positive"))
        self.assertEqual(c.hits, [])


if __name__ == "__main__":
    unittest.main()
