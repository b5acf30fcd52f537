"""net.metadata-imdsv2: the tokenless GET (401 from an IMDSv2 server), the PUT for a token and the
tokened GET, each tagged; a filter that stops only the tokenless GET still leaves the row reached;
the token is recorded by its length only."""
import unittest

from probe_testing import MetadataShapeTests, ProbeTestCase, http_canary, run_probe


class Imdsv2ProbeTest(MetadataShapeTests, ProbeTestCase):
    PROBE = "net.metadata-imdsv2"
    STEPS = [("get-without-token", 401), ("token", 200), ("get-with-token", 200)]

    def check_shape(self, r):
        self.assertGreater(r["steps"][1]["token_length"], 20)

    def test_a_filter_on_the_tokenless_get_only_still_leaks(self):
        # A stand-in for a sandbox filter that stops a GET without the token header: the
        # connection of that one request is closed without an answer.
        c = self.canary(http_canary())
        handler = c.server.RequestHandlerClass
        plain_get = handler.do_GET

        def filtered(self):
            if "X-aws-ec2-metadata-token" not in self.headers:
                self.close_connection = True
                return
            plain_get(self)
        handler.do_GET = filtered
        r = run_probe(self.PROBE, {"target": c.target, "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("reached", "positive"), r)
        self.assertEqual([(s["step"], s["outcome"], s["status"]) for s in r["steps"]],
                         [("get-without-token", "no_reply", None), ("token", "reached", 200),
                          ("get-with-token", "reached", 200)])
        self.assertIn("GET /latest/meta-data/ (get-without-token): no_reply", r["detail"])


if __name__ == "__main__":
    unittest.main()
