"""E2E: what a careful bubblewrap line may still hand over from its caller, one weakness at a time.

One run of the four rows (cred.keyring, net.abstract-unix, fs.unix-sockets, fs.inherited-fds)
against the local control (which shows each exposure: it sees the planted keys, shares the
network namespace and the host's files, and is handed the planted descriptors) and:

  bubblewrap            manifests/bubblewrap.yaml as shipped                 -> every row PASS
  bwrap-old-keyring     the same without `keyctl new_session` and with /proc/keys (the line
                        before the fix: the caller's session keyring is inherited) -> keyring FAIL
  bwrap-share-net       --share-net: the host's abstract unix sockets       -> abstract FAIL
  bwrap-ro-host         --ro-bind / / for /usr: a read-only view of the host -> unix-sockets FAIL
                        (the canary folder lives outside /tmp: the sandbox's own /tmp hides it)
  bwrap-leaky-launcher  a launcher that opens / and the run's canary folder and token without
                        O_CLOEXEC, then execs the bubblewrap line (which passes descriptors
                        on)                                                  -> inherited-fds FAIL
"""
import os
import re
import tempfile
import unittest

import e2e_util as u

ROWS = u.CALLER_ROWS
PARAMS = {p: u.DEFAULT_PARAMS[p] for p in ROWS}
# Opens its descriptors without O_CLOEXEC (os.open's are not inheritable: made so), then execs.
LAUNCHER = ("import os, sys\n"
            "for path in ('/', sys.argv[1], os.path.join(sys.argv[1], 'token')):\n"
            "    os.set_inheritable(os.open(path, os.O_RDONLY), True)\n"
            "os.execvp(sys.argv[2], sys.argv[2:])\n")


def without(argv, *drop):
    """argv without the items of `drop` (each a tuple of consecutive items)."""
    out, i = [], 0
    while i < len(argv):
        for d in drop:
            if tuple(argv[i:i + len(d)]) == d:
                i += len(d)
                break
        else:
            out.append(argv[i])
            i += 1
    return out


def variants():
    shipped = u.manifest_argv(u.BWRAP_MANIFEST)
    # env -i PATH=... | sh -c "keyctl new_session ...; exec" keyring | bwrap ...
    env, keyring, bwrap = shipped[:3], shipped[3:7], shipped[7:]
    assert env[:2] == ["env", "-i"], shipped[:3]
    assert "keyctl new_session" in keyring[2] and bwrap[0] == "bwrap", shipped[:8]
    share = list(bwrap)
    share.insert(share.index("--unshare-all") + 1, "--share-net")
    ro_host = list(bwrap)  # --ro-bind / / instead of /usr and its symlinks; --proc etc. after it
    start, end = ro_host.index("--ro-bind"), ro_host.index("--proc")
    assert ro_host[start:start + 3] == ["--ro-bind", "/usr", "/usr"], ro_host
    ro_host[start:end] = ["--ro-bind", "/", "/"]
    return {
        "bwrap-old-keyring": (env + without(bwrap, ("--ro-bind", "/dev/null", "/proc/keys")),
                              {"cred.keyring"}),
        "bwrap-share-net": (env + keyring + share, {"net.abstract-unix"}),
        "bwrap-ro-host": (env + keyring + ro_host, {"fs.unix-sockets"}),
        "bwrap-leaky-launcher": (["python3", "-c", LAUNCHER, "{run_folder}"] + shipped,
                                 {"fs.inherited-fds"}),
    }


class CallerLeaks(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-leaks-")
        cls.canary_tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-canary-",
                                                     dir=u.outside_tmp_dir())
        cls.canary_dir = cls.canary_tmp.name
        suite = u.write_suite(base, "caller-leaks", ROWS, PARAMS)
        # Generous deadlines: a launcher, keyctl, bwrap and python3 start on a loaded machine.
        args = ["--suite", suite, "--sandbox", u.BWRAP_MANIFEST, "--jobs", "4",
                "--default-timeout", "10", "--grace", "5"]
        cls.variants = variants()
        for name, (argv, _) in cls.variants.items():
            path = u.write_manifest(os.path.join(base, name + ".yaml"), name, argv,
                                    control=u.LOCAL_MANIFEST,
                                    description="bubblewrap.yaml weakened on purpose: " + name)
            args += ["--sandbox", path]
        cls.run_once(args, timeout=180)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.canary_tmp.cleanup()

    def test_each_weakness_fails_exactly_its_row_and_the_shipped_line_passes(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        for name, fail in [("bubblewrap", set())] + [(n, f) for n, (_, f) in
                                                     self.variants.items()]:
            got = {p: v for p, v in u.verdicts(self.report, name).items()}
            for probe in ROWS:
                with self.subTest(candidate=name, probe=probe):
                    want = "FAIL" if probe in fail else "PASS"
                    self.assertEqual(got[probe]["verdict"], want, got[probe]["reason"])
                    if want == "PASS":  # the local control reached the same canary, same run
                        self.assertEqual(got[probe]["validated_by"], "local")

    def test_the_control_shows_every_exposure(self):
        local = u.observations(self.report, "local")
        for probe in ROWS:
            with self.subTest(probe=probe):
                self.assertEqual(local[probe]["exposure"], "exposed", local[probe]["reason"])
        kinds = {h["kind"] for h in local["net.abstract-unix"]["evidence"]["canary_hits"]}
        self.assertEqual(kinds, {"abstract-unix"})
        keys = local["cred.keyring"]["evidence"]["result"]["keys"]
        self.assertEqual({k["description"].rsplit(":", 1)[1] for k in keys
                          if k["read"] and k["read"]["canary"]}, {"session", "user"})

    def test_failures_rest_on_server_side_or_kernel_proof(self):
        obs = lambda arm, probe: u.observations(self.report, arm)[probe]
        keyring = obs("bwrap-old-keyring", "cred.keyring")["evidence"]["result"]
        self.assertEqual(keyring["outcome"], "readable")
        read = {k["description"].rsplit(":", 1)[1]: k for k in keyring["keys"] if k["read"]}
        self.assertTrue(read["session"]["read"]["canary"], keyring)  # the inherited keyring
        hits = obs("bwrap-share-net", "net.abstract-unix")["evidence"]["canary_hits"]
        self.assertEqual([h["kind"] for h in hits], ["abstract-unix"])
        hits = obs("bwrap-ro-host", "fs.unix-sockets")["evidence"]["canary_hits"]
        self.assertEqual([h["kind"] for h in hits], ["unix"])
        fds = obs("bwrap-leaky-launcher", "fs.inherited-fds")["evidence"]["result"]
        dirs = [d for d in fds["descriptors"] if d["kind"] == "directory"]
        self.assertEqual([d["outside_root"] for d in dirs], [True, True])
        self.assertTrue(any(d.get("planted_token_inside") for d in dirs), dirs)
        files = [d for d in fds["descriptors"] if d["kind"] == "file"]
        self.assertTrue(files[0]["read"]["planted_token"], files)

    def test_the_shipped_line_passes_on_positive_evidence(self):
        cand = u.observations(self.report, "bubblewrap")
        for probe in ROWS:
            with self.subTest(probe=probe):
                self.assertEqual(cand[probe]["evidence_kind"], "positive", cand[probe]["reason"])
        self.assertIs(cand["net.abstract-unix"]["evidence"]["driver_facts"]["canary_listening"],
                      True)
        self.assertEqual(cand["fs.inherited-fds"]["evidence"]["result"]["count"], 0)
        self.assertEqual(cand["cred.keyring"]["evidence"]["result"]["proc_keys_errno"], "EACCES")

    def test_no_payload_or_token_is_ever_reported(self):
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name), encoding="utf-8") as f:
                text = f.read()
            self.assertNotRegex(text, r"spkey_[0-9a-f]{32}", name)
            self.assertNotRegex(text, r"sptok_[0-9a-f]{48}", name)

    def test_the_user_key_is_gone_after_the_run(self):
        # Invalidated at the run's end; the kernel's garbage collector drops it from /proc/keys
        # shortly after (until then it is listed with the "i" flag).
        import time
        for _ in range(50):
            with open("/proc/keys") as f:
                if "sandprobe:%s:" % self.report["run_id"] not in f.read():
                    return
            time.sleep(0.2)
        self.fail("the run's user keyring canary is still listed 10 s after the run")


if __name__ == "__main__":
    unittest.main()
