"""fs.docker-socket: an answering daemon socket, a mute one and none at all."""
import os
import socket
import tempfile
import threading
import unittest

from probe_testing import run_probe


class DockerSocketProbeTest(unittest.TestCase):
    def test_answering_present_and_absent_sockets(self):
        with tempfile.TemporaryDirectory() as d:
            docker = os.path.join(d, "docker.sock")
            other = os.path.join(d, "containerd.sock")
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(docker)
            srv.listen(1)
            mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            mute.bind(other)

            def answer():
                conn, _ = srv.accept()
                conn.recv(512)
                conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nOK")
                conn.close()
            t = threading.Thread(target=answer, daemon=True)
            t.start()
            r = run_probe("fs.docker-socket", {"paths": [docker, other], "timeout_s": 2}).result
            self.assertEqual(r["outcome"], "daemon_answers")
            r = run_probe("fs.docker-socket", {"paths": [other]}).result
            self.assertEqual(r["outcome"], "socket_present")
            r = run_probe("fs.docker-socket", {"paths": [os.path.join(d, "none.sock")]}).result
            self.assertEqual((r["outcome"], r["evidence"]), ("no_socket", "positive"))
            srv.close()
            mute.close()


if __name__ == "__main__":
    unittest.main()
