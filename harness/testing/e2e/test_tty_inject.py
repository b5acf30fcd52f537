"""E2E: proc.tty-inject through the real harness and real bubblewrap. Every arm that runs on a
terminal (`tty: true`) gets a pseudo-terminal the harness owns as stdin and controlling terminal;
after the call the harness reads the input left pending on it (what the shell would read next).

  local (control)          tty: true, no isolation: TIOCSTI types the word      -> exposed
  bubblewrap               manifests/bubblewrap.yaml (tty: true, --new-session) -> PASS
  bubblewrap-bounded       the same inside timeout/setpriv/prlimit               -> PASS
  bwrap-same-session       bubblewrap.yaml without --new-session                 -> FAIL where the
                           kernel's dev.tty.legacy_tiocsti is 1 (PASS where it is 0: the report
                           names the value, the verdict rests on it)
  bwrap-on-a-pipe          bubblewrap.yaml without tty: true and without --new-session: stdin is
                           /dev/null, there is no terminal to type into, and the row is
                           INCONCLUSIVE, never a PASS (the trap a pipe sets)
Nothing is ever typed with a newline: the word is only read back by the harness, never run.
"""
import os
import unittest

import e2e_util as u


def legacy_tiocsti():
    try:
        with open("/proc/sys/dev/tty/legacy_tiocsti") as f:
            return int(f.read().strip())
    except OSError:
        return "absent"


def bwrap_manifest(base, name, argv, tty):
    path = u.write_manifest(os.path.join(base, name + ".yaml"), name, argv,
                            control=u.LOCAL_MANIFEST, limits={"tmp": "32Mi"},
                            description="bubblewrap.yaml, " + name)
    if tty:
        with open(path, "a") as f:
            f.write("  tty: true\n")
    return path


class TerminalInjection(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-tty-")
        argv = u.manifest_argv(u.BWRAP_MANIFEST)
        same = [a for a in argv if a != "--new-session"]
        assert len(same) == len(argv) - 1
        suite = u.write_suite(base, "tty", ["proc.tty-inject"])
        cls.run_once(["--suite", suite, "--control", u.LOCAL_MANIFEST,
                      "--sandbox", u.BWRAP_MANIFEST, "--sandbox", u.BOUNDED_MANIFEST,
                      "--sandbox", bwrap_manifest(base, "bwrap-same-session", same, True),
                      "--sandbox", bwrap_manifest(base, "bwrap-on-a-pipe", same, False)]
                     + u.FAST_FLAGS, timeout=120)

    def cell(self, arm):
        return u.observations(self.report, arm)["proc.tty-inject"]

    def verdict(self, arm):
        return u.verdicts(self.report, arm)["proc.tty-inject"]

    def test_the_control_typed_into_its_terminal(self):
        c = self.cell("local")
        self.assertEqual(c["exposure"], "exposed", c["reason"])
        facts = c["evidence"]["driver_facts"]
        self.assertEqual(facts["tty"], True)
        self.assertGreaterEqual(facts["tty_injected"], 1)
        self.assertEqual(facts["legacy_tiocsti"], legacy_tiocsti())
        self.assertIn("legacy_tiocsti = %s" % legacy_tiocsti(), c["reason"])
        self.assertEqual(c["evidence"]["result"]["outcome"], "pushed")

    def test_new_session_passes_with_the_harness_proof(self):
        for arm in ("bubblewrap", "bubblewrap-bounded"):
            with self.subTest(arm=arm):
                v, c = self.verdict(arm), self.cell(arm)
                self.assertEqual((v["verdict"], v["validated_by"]), ("PASS", "local"), v["reason"])
                self.assertEqual(c["evidence_kind"], "positive")
                facts = c["evidence"]["driver_facts"]
                self.assertEqual((facts["tty_injected"], facts["tty_pending_input_bytes"]), (0, 0))
                r = c["evidence"]["result"]
                # With legacy TIOCSTI off the kernel answers EIO before it looks at the session.
                want = "EIO" if legacy_tiocsti() == 0 else "EPERM"
                self.assertEqual((r["outcome"], r["errno"]), ("refused", want), r)

    def test_the_same_session_types_into_the_shell_where_the_kernel_allows_it(self):
        v, c = self.verdict("bwrap-same-session"), self.cell("bwrap-same-session")
        facts = c["evidence"]["driver_facts"]
        self.assertEqual(facts["legacy_tiocsti"], legacy_tiocsti())
        if legacy_tiocsti() == 0:  # TIOCSTI needs CAP_SYS_ADMIN: EIO, and the row passes
            self.assertEqual(v["verdict"], "PASS", v["reason"])
            self.assertEqual(c["evidence"]["result"]["errno"], "EIO")
            self.assertIn("legacy_tiocsti = 0", c["reason"])
            return
        self.assertEqual(v["verdict"], "FAIL", v["reason"])
        self.assertEqual(c["label"], "TTY_INJECTED 1")
        self.assertEqual(facts["tty_injected"], 1)
        self.assertEqual(c["evidence"]["result"]["outcome"], "pushed")
        self.assertIn("legacy_tiocsti = %s" % legacy_tiocsti(), c["reason"])

    def test_a_pipe_is_inconclusive_never_a_pass(self):
        v, c = self.verdict("bwrap-on-a-pipe"), self.cell("bwrap-on-a-pipe")
        self.assertEqual(v["verdict"], "INCONCLUSIVE", v["reason"])
        self.assertEqual(c["evidence"]["result"]["outcome"], "no_tty")
        self.assertNotIn("tty_injected", c["evidence"]["driver_facts"])
        self.assertNotIn("tty", c["evidence"]["driver_facts"])

    def test_nothing_left_behind(self):
        self.assertEqual(u.sandprobe_processes(self.report["nonce_hash"]), [])


if __name__ == "__main__":
    unittest.main()
