"""priv.userns: a child tries unshare(CLONE_NEWUSER); bubblewrap's --disable-userns refuses it."""
import unittest

from probe_testing import run_in_bwrap, run_probe


class UsernsProbeTest(unittest.TestCase):
    def test_created_here_with_capabilities_inside(self):
        r = run_probe("priv.userns", {}).result
        # This test host allows unprivileged user namespaces (Debian's default).
        self.assertEqual((r["outcome"], r["evidence"]), ("created", "positive"), r)
        self.assertTrue(r["cap_eff_inside"].strip("0"), r)  # capabilities inside the namespace

    def test_bubblewrap_nests_a_namespace_by_default(self):
        self.assertEqual(run_in_bwrap("priv.userns", {}).result["outcome"], "created")

    def test_bubblewrap_disable_userns_refuses(self):
        r = run_in_bwrap("priv.userns", {}, extra=["--unshare-user", "--disable-userns"]).result
        self.assertEqual((r["outcome"], r["evidence"]), ("refused", "positive"), r)
        self.assertEqual(r["errno"], "ENOSPC")  # user.max_user_namespaces = 0 inside


if __name__ == "__main__":
    unittest.main()
