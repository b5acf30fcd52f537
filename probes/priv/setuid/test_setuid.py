"""priv.setuid: runs a setuid-root binary unprivileged and reads its euid from /proc."""
import os
import shutil
import tempfile
import unittest

from probe_testing import BWRAP, run_probe


class SetuidProbeTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("planting a setuid-root copy needs root")
        # A setuid-root copy of `id` in a directory nobody can reach: harmless, prints its ids.
        self.dir = tempfile.mkdtemp()
        os.chmod(self.dir, 0o755)
        self.helper = os.path.join(self.dir, "sandprobe-suid-id")
        shutil.copy(shutil.which("id"), self.helper)
        os.chmod(self.helper, 0o4755)
        self.addCleanup(shutil.rmtree, self.dir)

    def test_root_drops_then_the_helper_makes_root_again(self):
        r = run_probe("priv.setuid", {"helpers": [["/nonexistent"], [self.helper]],
                                      "drop_to": 65534}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("became_root", "positive"), r)
        self.assertEqual(r["helper"], self.helper)
        self.assertEqual(r["helper_uid"].split(), ["65534", "0", "0", "0"])
        self.assertEqual(r["looked"], ["/nonexistent", self.helper])

    def test_no_new_privs_keeps_the_caller_uid(self):
        r = run_probe("priv.setuid", {"helpers": [[self.helper]], "drop_to": 65534},
                      prefix=["setpriv", "--no-new-privs"]).result
        self.assertEqual((r["outcome"], r["evidence"]), ("not_elevated", "positive"), r)
        self.assertEqual(r["helper_uid"].split()[1], "65534")

    def test_nothing_setuid_is_unknown_not_contained(self):
        plain = os.path.join(self.dir, "plain")
        shutil.copy(shutil.which("id"), plain)  # not setuid
        r = run_probe("priv.setuid", {"helpers": [[plain]]}).result
        self.assertEqual(r["outcome"], "no_setuid_binary")

    def test_bubblewrap_as_nobody_ignores_the_bit(self):
        # setpriv first, as manifests/bubblewrap-bounded.yaml: the helper is owned by a uid the
        # sandbox's user namespace does not map, and bubblewrap sets no_new_privs.
        at = BWRAP.index("--remount-ro")
        r = run_probe("priv.setuid", {"helpers": [[self.helper]]},
               prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
               + BWRAP[:at] + ["--ro-bind", self.dir, self.dir] + BWRAP[at:],
               python="python3").result
        self.assertEqual((r["outcome"], r["evidence"]), ("not_elevated", "positive"), r)


if __name__ == "__main__":
    unittest.main()
