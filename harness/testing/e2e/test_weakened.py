"""E2E: deliberately weakened bubblewrap manifests must turn exactly the rows they weaken red.

Each manifest is the argv of manifests/bubblewrap.yaml with ONE change, written to a temp dir,
with `control:` naming the repo's manifests/local.yaml by absolute path. The suite is every
default row but the two resource rows (which cost a harness deadline and are not weakened here).
"""
import os
import tempfile
import unittest

import e2e_util as u

BASELINE = {p: "PASS" for p in u.CRED_ROWS + u.NET_ROWS + u.FS_ROWS}
BASELINE["platform.runtime-class"] = "SKIP"
SHARE_NET_FAILS = ["net.metadata", "net.dns", "net.http-by-name", "net.tcp-by-ip", "net.k8s-api",
                   "net.udp", "net.interfaces", "cred.cloud-metadata"] + u.METADATA_ROWS


def weakened_run(test_cls, name, argv, canary_parent=None):
    """Writes the manifest + suite, runs sandprobe, stores res/report/out on the class."""
    u.require_bwrap()
    test_cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-%s-" % name)
    base = test_cls.tmp.name
    test_cls.canary_tmp = None
    canary_dir = os.path.join(base, "canary")
    if canary_parent is not None:
        test_cls.canary_tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-canary-",
                                                          dir=canary_parent)
        canary_dir = test_cls.canary_tmp.name
    test_cls.canary_dir = canary_dir
    manifest = u.write_manifest(os.path.join(base, name + ".yaml"), name, argv,
                                control=u.LOCAL_MANIFEST, limits={"tmp": "32Mi"},
                                description="bubblewrap.yaml weakened on purpose: " + name)
    suite = u.write_suite(base, "weakened", u.FAST_ROWS)
    test_cls.out = os.path.join(base, "out")
    test_cls.name = name
    test_cls.res = u.run_sandprobe(
        ["run", "--suite", suite, "--sandbox", manifest, "--out", test_cls.out,
         "--canary-dir", canary_dir] + u.FAST_FLAGS, timeout=60)
    test_cls.report = u.report_or_none(test_cls.out)


class WeakenedCase(u.RunCase):
    changed = {}  # probe -> verdict that differs from BASELINE

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        if cls.canary_tmp is not None:
            cls.canary_tmp.cleanup()

    def setUp(self):
        super().setUp()
        self.got = {p: v["verdict"] for p, v in u.verdicts(self.report, self.name).items()}

    def assert_verdicts(self, probes):
        for probe in probes:
            with self.subTest(probe=probe):
                want = self.changed.get(probe, BASELINE[probe])
                v = u.verdicts(self.report, self.name)[probe]
                self.assertEqual(v["verdict"], want, "%s: %s" % (probe, v["reason"]))

    def unchanged_rows(self):
        return [p for p in BASELINE if p not in self.changed]


class ShareNet(WeakenedCase):
    """--share-net: the sandbox keeps the host's network namespace."""
    changed = {p: "FAIL" for p in SHARE_NET_FAILS}

    @classmethod
    def setUpClass(cls):
        argv = u.manifest_argv(u.BWRAP_MANIFEST)
        argv.insert(argv.index("--unshare-all") + 1, "--share-net")
        weakened_run(cls, "bwrap-share-net", argv)

    def test_exit_code_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())

    def test_network_rows_fail_with_canary_proof(self):
        rows = [p for p in SHARE_NET_FAILS if p != "net.http-by-name"]
        self.assert_verdicts(rows)
        cand = u.observations(self.report, self.name)
        for probe in ["net.metadata", "net.dns", "net.tcp-by-ip", "net.k8s-api"] + u.METADATA_ROWS:
            with self.subTest(probe=probe):
                self.assertTrue(cand[probe]["evidence"]["canary_hits"],
                                "%s: no server-side canary proof" % probe)
        self.assertNotEqual(cand["net.interfaces"]["evidence"]["result"]["names"], ["lo"])
        # The host's network reaches the canaries' credential paths: the canary says it served
        # its credential (hit kind "credential"), over IPv4 and IPv6.
        cred = cand["cred.cloud-metadata"]
        self.assertEqual(cred["label"], "CREDENTIAL SERVED", cred["reason"])
        peers = {h["peer"][0] for h in cred["evidence"]["canary_hits"] if h["kind"] == "credential"}
        self.assertEqual(peers, {"1", "["})

    def test_http_by_name_fails(self):
        # The sandbox shares the host network: an HTTP request by name is one resolver away.
        self.assert_verdicts(["net.http-by-name"])

    def test_cred_fs_rows_still_pass(self):
        self.assert_verdicts(self.unchanged_rows())


class NoClearenv(WeakenedCase):
    """No env -i, no --clearenv (and no --setenv): the harness's environment leaks into the
    sandboxed program itself (test_env_leak.py keeps --clearenv and drops only env -i)."""
    changed = {"cred.env-secrets": "FAIL"}

    @classmethod
    def setUpClass(cls):
        argv, out, i = u.manifest_argv(u.BWRAP_MANIFEST), [], 0
        assert argv[:3] == ["env", "-i", "PATH=/usr/bin:/bin"], argv
        argv = argv[3:]
        while i < len(argv):
            if argv[i] == "--clearenv":
                i += 1
            elif argv[i] == "--setenv":
                i += 3
            else:
                out.append(argv[i])
                i += 1
        assert "--clearenv" not in out and "--setenv" not in out
        weakened_run(cls, "bwrap-keep-env", out)

    def test_exit_code_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())

    def test_env_secrets_fail(self):
        self.assert_verdicts(["cred.env-secrets"])
        result = u.observations(self.report, self.name)["cred.env-secrets"]["evidence"]["result"]
        self.assertTrue(result["canary_matches"])
        self.assertIn("SANDPROBE_CANARY_API_TOKEN", result["secret_like_names"])
        self.assertEqual(result["own_env_matches"],
                         sorted(["SANDPROBE_CANARY_API_TOKEN", "AWS_SECRET_ACCESS_KEY",
                                 "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN",
                                 "CI_JOB_TOKEN"]))

    def test_canary_value_never_reported(self):
        # The planted value is random per run; only its name and hash may appear anywhere.
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name), encoding="utf-8") as f:
                self.assertNotRegex(f.read(), r"spk_[0-9a-f]{32}", name)

    def test_other_rows_unchanged(self):
        self.assert_verdicts(self.unchanged_rows())


class RoBindRoot(WeakenedCase):
    """`--ro-bind / /` instead of the /usr bind + symlinks: the host's files (and /sys) show."""
    changed = {"cred.sa-token": "FAIL"}

    @classmethod
    def setUpClass(cls):
        argv = u.manifest_argv(u.BWRAP_MANIFEST)
        start = argv.index("--ro-bind")
        end = argv.index("--proc")
        assert argv[start:start + 3] == ["--ro-bind", "/usr", "/usr"], argv
        argv[start:end] = ["--ro-bind", "/", "/"]  # keeps --proc, --dev, --tmpfs /tmp after it
        # The canary token must live outside /tmp: the sandbox's own /tmp would hide it.
        weakened_run(cls, "bwrap-ro-bind-root", argv, canary_parent=u.outside_tmp_dir())
        assert not os.path.realpath(cls.canary_dir).startswith("/tmp/")

    def test_exit_code_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())

    def test_interfaces_pass_although_sys_class_net_lies(self):
        # docs/traps.md, trap 9: /sys/class/net is the host's under --ro-bind / /; the probe must judge
        # from its own namespace (if_nameindex), which has loopback only.
        self.assert_verdicts(["net.interfaces"])
        result = u.observations(self.report, self.name)["net.interfaces"]["evidence"]["result"]
        self.assertEqual(result["outcome"], "loopback_only")
        self.assertEqual(result["names"], ["lo"])
        sys_net = result["sys_class_net"]
        self.assertIsInstance(sys_net, list, "sys_class_net: %r" % (sys_net,))
        self.assertIn("lo", sys_net)
        self.assertGreater(len(sys_net), 1, "the host's /sys/class/net shows more than lo")

    def test_sa_token_fails_host_files_are_readable(self):
        # A real finding about `--ro-bind / /`: every host file readable by the user is readable
        # in the sandbox, including a token planted outside /tmp.
        self.assert_verdicts(["cred.sa-token"])
        result = u.observations(self.report, self.name)["cred.sa-token"]["evidence"]["result"]
        self.assertTrue(result["canary_readable"])
        self.assertEqual(len(result["readable_paths"]), 1)
        self.assertTrue(result["readable_paths"][0].startswith(self.canary_dir + "/"))

    def test_other_rows_unchanged(self):
        self.assert_verdicts(self.unchanged_rows())

    def test_canary_dir_cleaned(self):
        self.assertEqual(os.listdir(self.canary_dir), [])


if __name__ == "__main__":
    unittest.main()
