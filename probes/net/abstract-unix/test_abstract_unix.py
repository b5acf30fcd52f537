"""net.abstract-unix: the echo through the run's abstract name, a refusal in another network
namespace (bubblewrap --unshare-net) and a listener that connects and says nothing."""
import os
import shutil
import socket
import socketserver
import threading
import unittest

from probe_testing import BWRAP, echo_of, new_ids, run_probe


def abstract_canary(name, echo=True):
    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            line = self.rfile.readline(4096).decode(errors="replace").strip()
            reply = echo_of(line) if echo else None
            if reply:
                self.wfile.write(reply)

    server = socketserver.ThreadingUnixStreamServer("\0" + name, Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class AbstractUnixProbeTest(unittest.TestCase):
    def test_the_runs_name_answers_with_the_nonce(self):
        ids = new_ids()
        server = abstract_canary("sandprobe-" + ids[0])
        try:
            r = run_probe("net.abstract-unix", {}, ids=ids).result
            self.assertEqual((r["outcome"], r["evidence"]), ("reached", "positive"), r)
            self.assertIs(r["listed_in_proc_net_unix"], True)
        finally:
            server.shutdown()
            server.server_close()

    def test_no_listener_is_refused_and_a_mute_one_is_unknown(self):
        ids = new_ids()
        r = run_probe("net.abstract-unix", {}, ids=ids).result
        self.assertEqual((r["outcome"], r["errno"]), ("refused", "ECONNREFUSED"))
        server = abstract_canary("sandprobe-" + ids[0], echo=False)
        try:
            r = run_probe("net.abstract-unix", {"timeout_s": 1}, ids=ids).result
            self.assertEqual(r["outcome"], "no_echo")
        finally:
            server.shutdown()
            server.server_close()

    @unittest.skipUnless(shutil.which("bwrap"), "bubblewrap")
    def test_a_new_network_namespace_hides_a_live_listener(self):
        ids = new_ids()
        server = abstract_canary("sandprobe-" + ids[0])
        try:
            r = run_probe("net.abstract-unix", {}, ids=ids, prefix=BWRAP, python="python3").result
            self.assertEqual((r["outcome"], r["evidence"]), ("refused", "positive"), r)
            shared = BWRAP + ["--share-net"]
            r = run_probe("net.abstract-unix", {}, ids=ids, prefix=shared, python="python3").result
            self.assertEqual(r["outcome"], "reached", r)
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    unittest.main()
