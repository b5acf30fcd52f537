"""fs.unix-sockets: the socket canary reached through a read-only bind, absent from a careful
view, a well-known socket reported by path (never connected to) and a dead canary."""
import os
import shutil
import socket
import socketserver
import tempfile
import threading
import unittest

from probe_testing import BWRAP, echo_of, run_probe

NONE_KNOWN = {"well_known": [], "prefixes": [""]}


def path_canary(path):
    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            reply = echo_of(self.rfile.readline(4096).decode(errors="replace").strip())
            if reply:
                self.wfile.write(reply)

    server = socketserver.ThreadingUnixStreamServer(path, Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class UnixSocketsProbeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sp-unix-")
        self.path = os.path.join(self.dir, "unix.sock")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_reached_absent_dead_and_well_known(self):
        server = path_canary(self.path)
        try:
            r = run_probe("fs.unix-sockets", dict(NONE_KNOWN, canary_path=self.path)).result
            self.assertEqual((r["outcome"], r["evidence"]), ("reached", "positive"), r)
        finally:
            server.shutdown()
            server.server_close()
        r = run_probe("fs.unix-sockets", dict(NONE_KNOWN, canary_path=self.path)).result
        self.assertEqual(r["outcome"], "canary_refused")  # the file stays, nobody listens
        os.unlink(self.path)
        r = run_probe("fs.unix-sockets", dict(NONE_KNOWN, canary_path=self.path)).result
        self.assertEqual((r["outcome"], r["errno"]), ("none", "ENOENT"))
        known = os.path.join(self.dir, "docker.sock")
        mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mute.bind(known)
        mute.listen(1)
        try:
            r = run_probe("fs.unix-sockets", {"well_known": [os.path.join(self.dir, "*.sock")],
                                              "canary_path": self.path}).result
            self.assertEqual(r["outcome"], "daemon_sockets")
            self.assertEqual(r["well_known_present"], [known])
            mute.settimeout(0.2)
            with self.assertRaises(socket.timeout):  # the probe never connected to it
                mute.accept()
        finally:
            mute.close()

    @unittest.skipUnless(shutil.which("bwrap"), "bubblewrap")
    def test_a_read_only_view_still_connects(self):
        server = path_canary(self.path)
        try:
            params = dict(NONE_KNOWN, canary_path=self.path)
            r = run_probe("fs.unix-sockets", params, prefix=BWRAP, python="python3").result
            self.assertEqual((r["outcome"], r["evidence"]), ("none", "positive"), r)
            at = BWRAP.index("--remount-ro")
            ro = BWRAP[:at] + ["--ro-bind", self.dir, self.dir] + BWRAP[at:]
            r = run_probe("fs.unix-sockets", params, prefix=ro, python="python3").result
            self.assertEqual(r["outcome"], "reached", r)
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    unittest.main()
