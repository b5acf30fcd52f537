"""fs.write-root: creates and removes a file where it may, names the errno where it may not."""
import os
import tempfile
import unittest

from probe_testing import run_in_bwrap, run_probe


class WriteRootProbeTest(unittest.TestCase):
    def test_write_root_creates_and_removes(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_probe("fs.write-root", {"paths": [tmp, os.path.join(tmp, "no")]}).result
            self.assertEqual(os.listdir(tmp), [])
        self.assertEqual((r["outcome"], r["created"]), ("created", [tmp]))
        self.assertEqual(r["attempts"][0]["removed"], True)
        self.assertEqual(r["attempts"][1]["errno"], "ENOENT")

    def test_write_root_refused_read_only(self):
        r = run_in_bwrap("fs.write-root", {"paths": ["/", "/etc", "/usr/bin"]}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("refused", "positive"))
        self.assertEqual([a["errno"] for a in r["attempts"]], ["EROFS", "ENOENT", "EROFS"])


if __name__ == "__main__":
    unittest.main()
