"""cred.keyring: the canary read where it was planted (a session keyring and the user keyring,
as the harness plants them), in bubblewrap as shipped before the fix (the session keyring
inherited: read), and behind a new session keyring with /proc/keys hidden (not read)."""
import ctypes
import hashlib
import os
import secrets
import shutil
import unittest

from probe_testing import BWRAP, run_probe

KEYCTL, ADD_KEY = 250, 248  # x86_64
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def add_key(description, payload, ring):
    return libc.syscall(ctypes.c_long(ADD_KEY), b"user", description.encode(), payload,
                        ctypes.c_size_t(len(payload)), ctypes.c_long(ring))


@unittest.skipUnless(os.uname().machine == "x86_64", "syscall numbers of x86_64")
class KeyringProbeTest(unittest.TestCase):
    def setUp(self):
        tag = secrets.token_hex(4)
        self.user_desc = "sandprobe:test-%s:user" % tag
        self.session_desc = "sandprobe:test-%s:session" % tag
        self.payload = ("spkey_" + secrets.token_hex(16)).encode()
        self.user_key = add_key(self.user_desc, self.payload, -4)
        self.assertGreater(self.user_key, 0, "add_key to the user keyring failed")
        self.params = dict(user_key=self.user_desc, session_key=self.session_desc,
                           canary_sha256=hashlib.sha256(self.payload).hexdigest())

    def tearDown(self):
        libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(21), ctypes.c_long(self.user_key))

    def plant(self):
        """preexec_fn: the harness's launch path (process.cc PlantSessionKeys)."""
        libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(1), None)
        libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(8), ctypes.c_long(-4), ctypes.c_long(-3))
        add_key(self.session_desc, self.payload, -3)

    def test_read_where_it_was_planted(self):
        r = run_probe("cred.keyring", self.params, preexec_fn=self.plant).result
        self.assertEqual((r["outcome"], r["evidence"]), ("readable", "positive"), r)
        self.assertNotIn(self.payload.decode(), str(r))
        self.assertEqual({k["description"] for k in r["keys"] if k["read"]["canary"]},
                         {self.user_desc, self.session_desc})

    @unittest.skipUnless(shutil.which("bwrap") and shutil.which("keyctl"), "bwrap and keyctl")
    def test_bubblewrap_inherits_the_session_keyring_unless_given_a_new_one(self):
        r = run_probe("cred.keyring", self.params, preexec_fn=self.plant, prefix=BWRAP,
                      python="python3").result
        self.assertEqual(r["outcome"], "readable", r)
        fixed = ["sh", "-c", 'keyctl new_session >/dev/null && exec "$@"', "keyring"] + BWRAP + [
            "--ro-bind", "/dev/null", "/proc/keys"]
        r = run_probe("cred.keyring", self.params, preexec_fn=self.plant, prefix=fixed,
                      python="python3").result
        self.assertIn(r["outcome"], ("not_found", "visible"), r)
        self.assertEqual(r["evidence"], "positive")
        self.assertEqual(r["proc_keys_errno"], "EACCES")

    def test_nothing_planted_is_no_evidence(self):
        r = run_probe("cred.keyring", {}).result
        self.assertEqual(r["outcome"], "no_canary")


if __name__ == "__main__":
    unittest.main()
