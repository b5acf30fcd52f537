"""assemble.py: the deployed script's layout, the size cap and argument checking."""
import base64
import os
import subprocess
import sys
import tempfile
import unittest

from probe_testing import ASSEMBLE, LIB, all_probe_ids, assemble, probe_dir, scratch_probe


class AssembleTest(unittest.TestCase):
    def test_deployed_script_layout(self):
        script = assemble(probe_dir("net.dns"), {"server": "127.0.0.1:53", "z": "\u00e9"},
                          "0123456789abcdef", "i3f9a2c")
        lines = script.splitlines()
        self.assertEqual(lines[0], "# sandprobe probe net.dns")
        self.assertTrue(lines[1].startswith('_SANDPROBE = "') and lines[1].endswith('"'))
        # Byte for byte what nlohmann::json's dump() gives in the harness: sorted keys, no
        # spaces, UTF-8 rather than \u escapes.
        blob = base64.b64decode(lines[1][len('_SANDPROBE = "'):-1]).decode("utf-8")
        self.assertEqual(blob, '{"invocation":"i3f9a2c","nonce":"0123456789abcdef",'
                               '"params":{"server":"127.0.0.1:53","z":"\u00e9"},"probe":"net.dns"}')
        with open(os.path.join(LIB, "preamble.py")) as f:
            preamble = f.read()
        with open(os.path.join(probe_dir("net.dns"), "probe.py")) as f:
            body = f.read()
        self.assertEqual("\n".join(lines[2:]) + "\n", preamble + body)

    def test_preamble_is_small_and_every_script_is_under_the_cap(self):
        with open(os.path.join(LIB, "preamble.py")) as f:
            # It rides along in every script: only what several probes share (records, network
            # failures, HTTP requests, the TCP echo exchange, heartbeats, the concurrent pair's
            # names and its closing judgment, the routing table, the cloud metadata shapes of six
            # probes) belongs there.
            self.assertLess(len(f.read().splitlines()), 340)
        for pid in all_probe_ids():
            script = assemble(probe_dir(pid), {}, "0123456789abcdef", "i1")
            self.assertLess(len(script.encode()), 64 * 1024, pid)

    def test_rejects_oversized_scripts_and_bad_arguments(self):
        with tempfile.TemporaryDirectory() as tmp:
            scratch_probe(tmp, "test.big", "# padding\n" * 7000)  # 70 000 bytes
            for args in ([tmp], [probe_dir("net.dns"), "--nonce", "XYZ"],
                         [probe_dir("net.dns"), "--params", "[1]"]):
                out = subprocess.run([sys.executable, ASSEMBLE] + args, capture_output=True,
                                     text=True)
                self.assertEqual(out.returncode, 2, args)
                self.assertEqual(out.stdout, "")


if __name__ == "__main__":
    unittest.main()
