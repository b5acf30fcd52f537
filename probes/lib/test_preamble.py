"""preamble.py's helpers and record writer."""
import tempfile
import unittest

from probe_testing import MARK, run_probe, scratch_probe, start_probe


class PreambleTest(unittest.TestCase):
    """The helpers, run inside a deployed script (the preamble owns fd 1 and sys.excepthook)."""

    BODY = r'''
import ssl
checks = {
    "loopback": {h: is_loopback(h) for h in ["127.0.0.1", "127.8.9.10", "::1", "[::1]",
        "::ffff:127.0.0.1", "localhost", "LOCALHOST.", "api.localhost", "10.0.0.1",
        "169.254.169.254", "0.0.0.0", "example.com", "::ffff:10.0.0.1"]},
    "split": [split_hostport(t, 443) for t in ["1.2.3.4:80", "[::1]:53", "::1", "host",
        "[fd00::1]", "kubernetes.default.svc:6443"]],
    "errno": [errno_name(e) for e in [ConnectionRefusedError(111, "x"),
        socket.gaierror(socket.EAI_NONAME, "x"), socket.gaierror(socket.EAI_AGAIN, "x"),
        TimeoutError("timed out"), ValueError("x"), ssl.SSLError(1, "x"), OSError(99999, "x")]],
    "net": [net_failure(e, h)[:3] for e, h in [(ConnectionRefusedError(111, "x"), "127.0.0.1"),
        (ConnectionRefusedError(111, "x"), "10.0.0.1"), (OSError(101, "x"), "10.0.0.1"),
        (OSError(113, "x"), "10.0.0.1"), (TimeoutError("timed out"), "10.0.0.1"),
        (ConnectionResetError(104, "x"), "10.0.0.1")]],
    "sha": sha256_prefix(b"abc"),
    "heartbeat": [heartbeat_target(t) for t in ["{canary.tcp}", "", None, "127.0.0.1:9"]],
    "params": PARAMS, "ids": [PROBE, NONCE, INVOCATION, MARK],
}
emit("progress", seq=999, probe="forged", checks=checks)
result("reached", "positive")
result("blocked", "positive")  # a second result is dropped: exactly one per run
raise ValueError("after the result: no second record")
'''

    def run_body(self, body, params):
        with tempfile.TemporaryDirectory() as tmp:
            scratch_probe(tmp, "test.helpers", body)
            return run_probe("test.helpers", params, directory=tmp)

    def test_helpers(self):
        run = self.run_body(self.BODY, {"x": [1, "two"]})
        progress = run.records[0]
        self.assertEqual((progress["kind"], progress["probe"], progress["seq"]),
                         ("progress", "test.helpers", 1))
        c = progress["checks"]
        self.assertEqual(c["loopback"], {
            "127.0.0.1": True, "127.8.9.10": True, "::1": True, "[::1]": True,
            "::ffff:127.0.0.1": True, "localhost": True, "LOCALHOST.": True,
            "api.localhost": True, "10.0.0.1": False, "169.254.169.254": False,
            "0.0.0.0": False, "example.com": False, "::ffff:10.0.0.1": False})
        self.assertEqual(c["split"], [["1.2.3.4", 80], ["::1", 53], ["::1", 443], ["host", 443],
                                      ["fd00::1", 443], ["kubernetes.default.svc", 6443]])
        self.assertEqual(c["errno"], ["ECONNREFUSED", "EAI_NONAME", "EAI_AGAIN", "TimeoutError",
                                      "ValueError", "SSLError", "E99999"])
        self.assertEqual(c["net"], [["blocked", "positive", "ECONNREFUSED"],
                                    ["refused", "positive", "ECONNREFUSED"],
                                    ["blocked", "positive", "ENETUNREACH"],
                                    ["blocked", "positive", "EHOSTUNREACH"],
                                    ["blocked", "absence", "TimeoutError"],
                                    ["error", "absence", "ECONNRESET"]])
        self.assertEqual(c["sha"], "ba7816bf8f01")
        # The heartbeat rows' default, unfilled outside the harness, is no address.
        self.assertEqual(c["heartbeat"], ["", "", "", "127.0.0.1:9"])
        self.assertEqual(c["params"], {"x": [1, "two"]})
        self.assertEqual(c["ids"], ["test.helpers", run.nonce, run.invocation, "@@sandprobe"])
        self.assertEqual([r["kind"] for r in run.records], ["progress", "result"])
        self.assertEqual(run.result["outcome"], "reached")
        self.assertEqual(run.result["seq"], 2)
        self.assertIn("ValueError", run.stderr)  # the traceback still reaches stderr

    def test_records_are_one_compact_ascii_line_each(self):
        run = self.run_body('emit("progress", text="line\\nbreak \\u00e9 \\"q\\"")\n', {})
        self.assertEqual(run.other_lines, [])
        line = run.stdout.splitlines()[0]
        self.assertEqual(line, '%s %s {"kind":"progress","probe":"test.helpers","seq":1,'
                               '"text":"line\\nbreak \\u00e9 \\"q\\""}' % (MARK, run.nonce))

    def test_a_crash_still_ends_in_a_result(self):
        run = run_probe("res.memory-balloon", {"target_mib": "lots", "step_mib": 16})
        self.assertEqual((run.result["outcome"], run.result["evidence"], run.result["errno"]),
                         ("error", "absence", "ValueError"))
        self.assertEqual(run.returncode, 1)

    def test_a_vanished_reader_ends_the_probe_quietly(self):
        proc, _, _ = start_probe("res.cpu-loop", {"heartbeat_s": 0.05, "max_s": 30})
        proc.stdout.close()  # before the first record is written
        try:
            rc = proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(rc, 141)
        self.assertEqual(proc.stderr.read(), "")
        proc.stderr.close()


if __name__ == "__main__":
    unittest.main()
