"""End-to-end: the rows that judge claims and try privileges (fs.write-exec, kernel.syscalls,
priv.userns, priv.setuid) on real sandboxes: docker (runc and gVisor) and bubblewrap, each row
FAILed by one variant and PASSed by another. Claims come from the manifests' limits (noexec,
seccomp). Fails loudly, never skips, without the daemon, the image or bubblewrap.

data/moby-seccomp-default.json is moby's current default seccomp profile (Apache-2.0), copied
from moby/moby vendor/github.com/moby/profiles/seccomp/default.json at b985e2313a; unlike the
Docker 20.10 daemon's built-in profile it refuses io_uring_setup."""
import json
import os
import tempfile
import unittest

import e2e_util as u
from test_docker import GATEWAY, containers_of, require_docker
from test_docker_weakened import hardened_with

ROWS = ["fs.write-exec", "kernel.syscalls", "priv.userns", "priv.setuid"]
CALLS = ["bpf", "perf_event_open", "keyctl", "io_uring_setup", "unshare", "mount"]
HERE = os.path.dirname(os.path.abspath(__file__))
GVISOR = os.path.join(u.MANIFESTS, "docker", "gvisor.yaml")
HARDENED_LIMITS = "limits: {timeout: 10s, memory: 256Mi, tmp: 32Mi, pids: %d, noexec: true}"
CLAIMS = "limits: {timeout: 10s, memory: 256Mi, tmp: 32Mi, pids: %d, noexec: true, " \
         "seccomp: default}"


def with_claims(text, pids=64):
    """The shipped manifest's limits (pids: 64; the gVisor one 128, trap 19) + seccomp: default."""
    if HARDENED_LIMITS % pids not in text:
        raise AssertionError("the shipped docker manifest's limits changed: " + text)
    return text.replace(HARDENED_LIMITS % pids, CLAIMS % pids)


def moby_profile_opt():
    with open(os.path.join(HERE, "data", "moby-seccomp-default.json")) as f:
        profile = json.load(f)
    # JSON strings are YAML double-quoted scalars: the profile travels inline, as the Engine
    # API takes it (the CLI reads a file and sends its content the same way).
    return "[no-new-privileges, %s]" % json.dumps("seccomp=" + json.dumps(profile,
                                                                          separators=(",", ":")))


def read(path):
    with open(path) as f:
        return f.read()


def calls_of(obs):
    return {c["call"]: c for c in obs["evidence"]["result"]["calls"]}


DOCKER_VARIANTS = {
    # name: manifest text
    "dk-moby-seccomp": lambda: with_claims(hardened_with(
        "dk-moby-seccomp", {"SecurityOpt": moby_profile_opt()})),
    "dk-default-seccomp": lambda: with_claims(hardened_with("dk-default-seccomp", {})),
    # Every weakness the four rows look at: an exec-able /tmp (Docker's tmpfs is noexec unless
    # told `exec`), no seccomp, no no_new_privs.
    "dk-weak": lambda: with_claims(hardened_with(
        "dk-weak", {"Tmpfs": '{/tmp: "size=32m,exec"}', "SecurityOpt": "[seccomp=unconfined]"})),
    "dk-gvisor-claims": lambda: with_claims(read(GVISOR), pids=128).replace(
        "name: docker-gvisor", "name: dk-gvisor-claims").replace(
        "control: open", "control: " + os.path.join(u.MANIFESTS, "docker", "open.yaml")),
}


class DockerClaims(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_docker()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-docker-priv-")
        suite = u.write_suite(cls.tmp.name, "priv", ROWS)
        args = ["run", "--suite", suite, "--out", os.path.join(cls.tmp.name, "out"),
                "--canary-dir", os.path.join(cls.tmp.name, "canary"), "--jobs", "4",
                "--control", u.LOCAL_MANIFEST,
                "--control", os.path.join(u.MANIFESTS, "docker", "open.yaml"),
                "--canary-bind", GATEWAY,
                "--sandbox", os.path.join(u.MANIFESTS, "docker", "hardened.yaml"),
                "--sandbox", GVISOR]
        for name, text in DOCKER_VARIANTS.items():
            path = os.path.join(cls.tmp.name, name + ".yaml")
            with open(path, "w") as f:
                f.write(text())
            args += ["--sandbox", path]
        cls.res = u.run_sandprobe(args, timeout=200)
        cls.report = u.report_or_none(os.path.join(cls.tmp.name, "out"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.assertIsNotNone(self.report, self.res.describe())

    def verdict(self, arm, probe):
        return u.verdicts(self.report, arm)[probe]

    def test_controls_show_every_row(self):
        for control in ("local", "docker-open"):
            obs = u.observations(self.report, control)
            for probe in ROWS:
                if control == "docker-open" and probe == "priv.userns":
                    # Docker's default profile refuses unshare even to root: the local
                    # control validates this row.
                    self.assertEqual(obs[probe]["exposure"], "contained")
                    continue
                with self.subTest(control=control, probe=probe):
                    self.assertEqual(obs[probe]["exposure"], "exposed", obs[probe]["reason"])

    def test_shipped_hardened_and_gvisor(self):
        for arm in ("docker-hardened", "docker-gvisor"):
            v = u.verdicts(self.report, arm)
            self.assertEqual(v["fs.write-exec"]["verdict"], "PASS", v["fs.write-exec"]["reason"])
            self.assertEqual(v["priv.setuid"]["verdict"], "PASS", v["priv.setuid"]["reason"])
            # No seccomp claim in the shipped manifests: listed, not judged.
            self.assertEqual(v["kernel.syscalls"]["verdict"], "SKIP")
            self.assertIn("claims no limits.seccomp", v["kernel.syscalls"]["reason"])
        self.assertEqual(self.verdict("docker-hardened", "priv.userns")["verdict"], "PASS")
        self.assertEqual(self.verdict("docker-gvisor", "priv.userns")["verdict"], "FAIL")

    def test_moby_profile_passes_the_seccomp_claim(self):
        v = self.verdict("dk-moby-seccomp", "kernel.syscalls")
        self.assertEqual(v["verdict"], "PASS", v["reason"])
        calls = calls_of(u.observations(self.report, "dk-moby-seccomp")["kernel.syscalls"])
        self.assertEqual(sorted(calls), sorted(CALLS))
        self.assertEqual({c["errno"] for c in calls.values()}, {"EPERM"})
        for probe in ROWS:
            self.assertEqual(self.verdict("dk-moby-seccomp", probe)["verdict"], "PASS", probe)

    def test_daemon_default_profile_against_the_claim(self):
        # Docker < 25 lets io_uring_setup through its default profile; everything else is EPERM.
        obs = u.observations(self.report, "dk-default-seccomp")["kernel.syscalls"]
        allowed = obs["evidence"]["result"]["allowed"]
        self.assertLessEqual(set(allowed), {"io_uring_setup"}, obs["evidence"]["result"])
        want = "FAIL" if allowed else "PASS"
        self.assertEqual(self.verdict("dk-default-seccomp", "kernel.syscalls")["verdict"], want)

    def test_weak_variant_fails_every_row(self):
        for probe in ROWS:
            v = self.verdict("dk-weak", probe)
            with self.subTest(probe=probe):
                self.assertEqual(v["verdict"], "FAIL", v["reason"])
        obs = u.observations(self.report, "dk-weak")
        self.assertIn("/tmp", obs["fs.write-exec"]["evidence"]["result"]["executes"])
        self.assertEqual(obs["priv.setuid"]["evidence"]["result"]["helper_uid"].split()[:2],
                         ["65534", "0"])
        self.assertEqual(set(obs["kernel.syscalls"]["evidence"]["result"]["allowed"]), set(CALLS))

    def test_gvisor_answers_the_calls_itself(self):
        # runsc ignores the container's seccomp profile (no --oci-seccomp): what got through is
        # the sentry's answer, recorded here as measured on this machine.
        obs = u.observations(self.report, "dk-gvisor-claims")["kernel.syscalls"]
        calls = calls_of(obs)
        self.assertEqual(self.verdict("dk-gvisor-claims", "kernel.syscalls")["verdict"], "FAIL")
        self.assertEqual(calls["io_uring_setup"]["result"], "allowed", calls)
        self.assertEqual(calls["unshare"]["result"], "allowed", calls)
        self.assertEqual(calls["bpf"]["result"], "refused", calls)

    def test_nothing_left(self):
        self.assertEqual(containers_of(self.report["run_id"]), [])


def bounded_argv(replace=None, insert_after_bwrap=()):
    argv = u.manifest_argv(u.BOUNDED_MANIFEST)
    at = argv.index("bwrap") + 1
    argv[at:at] = list(insert_after_bwrap)
    for old, new in (replace or {}).items():
        i = argv.index(old[0])
        while argv[i:i + len(old)] != list(old):
            i = argv.index(old[0], i + 1)
        argv[i:i + len(old)] = list(new)
    return argv


class BubblewrapClaims(u.RunCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-bwrap-priv-")
        suite = u.write_suite(base, "priv", ROWS)
        claims = {"timeout": "10s", "noexec": True, "seccomp": "default"}
        # bubblewrap-bounded as shipped: an exec-able /tmp, no filter, nested user namespaces.
        open_ = u.write_manifest(os.path.join(base, "bw-claims.yaml"), "bw-claims",
                                 bounded_argv(), control="local", limits=claims)
        # Locked down: no user namespace inside, /dev read-only, no /tmp or /dev/shm at all.
        locked = bounded_argv(
            replace={("--size", "67108864", "--tmpfs", "/dev/shm"): (),
                     ("--size", "33554432", "--tmpfs", "/tmp"): ("--remount-ro", "/dev")},
            insert_after_bwrap=("--unshare-user", "--disable-userns"))
        locked_ = u.write_manifest(os.path.join(base, "bw-locked.yaml"), "bw-locked", locked,
                                   control="local", limits={"timeout": "10s", "noexec": True})
        cls.run_once(["--suite", suite, "--sandbox", open_, "--sandbox", locked_], timeout=120)

    def test_claims_fail_where_bubblewrap_leaves_them_open(self):
        v = u.verdicts(self.report, "bw-claims")
        for probe in ("fs.write-exec", "kernel.syscalls", "priv.userns"):
            self.assertEqual(v[probe]["verdict"], "FAIL", "%s: %s" % (probe, v[probe]["reason"]))
        obs = u.observations(self.report, "bw-claims")
        self.assertEqual(sorted(obs["fs.write-exec"]["evidence"]["result"]["executes"]),
                         ["/dev/shm", "/tmp"])

    def test_setuid_bit_is_ignored_in_its_user_namespace(self):
        v = u.verdicts(self.report, "bw-claims")["priv.setuid"]
        self.assertEqual(v["verdict"], "PASS", v["reason"])
        result = u.observations(self.report, "bw-claims")["priv.setuid"]["evidence"]["result"]
        self.assertEqual(result["helper_uid"].split()[1], "65534")
        self.assertEqual(result["found"][0]["owner_uid"], 65534)  # host root, unmapped here

    def test_locked_variant_passes(self):
        v = u.verdicts(self.report, "bw-locked")
        for probe in ("fs.write-exec", "priv.userns", "priv.setuid"):
            self.assertEqual(v[probe]["verdict"], "PASS", "%s: %s" % (probe, v[probe]["reason"]))
        self.assertEqual(v["kernel.syscalls"]["verdict"], "SKIP")  # no seccomp claim
        obs = u.observations(self.report, "bw-locked")["fs.write-exec"]
        self.assertEqual(obs["evidence"]["result"]["writable"], [])
        self.assertEqual(obs["evidence_kind"], "positive", obs["reason"])


if __name__ == "__main__":
    unittest.main()
