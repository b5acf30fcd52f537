"""End-to-end: docker-hardened with one weakness at a time, on the real daemon. Each variant must
FAIL exactly the rows its weakness exposes and PASS the rest. Probe traffic stays on loopback and
the --internal lab network."""
import os
import tempfile
import unittest

import e2e_util as u
from test_docker import GATEWAY, SUITE, containers_of, require_docker

HARDENED = os.path.join(u.MANIFESTS, "docker", "hardened.yaml")
NET_ROWS = {"net.metadata", "net.dns", "net.http-by-name", "net.tcp-by-ip", "net.k8s-api",
            "net.udp", "net.interfaces",
            # the lab gateway's canary answers as the clouds' metadata services and serves its
            # credential; the IPv6 row's [::1] is the container's own loopback: contained
            "net.metadata-imdsv2", "net.metadata-gcp", "net.metadata-azure", "net.metadata-alt",
            "cred.cloud-metadata",
            # Docker opens ping sockets to every group: the ICMP canary on the lab gateway hears
            # the echo request without any capability (net.host-loopback stays shut: the
            # gateway refuses, the canary is on the host's loopback only)
            "net.icmp"} | set(u.LATERAL_ROWS)  # the pair meets on the lab /24
RUNC = {"kernel.boundary"}  # every variant runs on runc, the host's kernel (an advisory row)


def hardened_with(name, host_config_changes, drop=(), user=None):
    """hardened.yaml's text with HostConfig lines replaced, added or removed, and optionally
    another user (kept as YAML text)."""
    with open(HARDENED) as f:
        lines = f.read().splitlines()
    out = []
    for line in lines:
        key = line.strip().split(":")[0]
        if line.startswith("name: "):
            line = "name: " + name
        elif line.startswith("control: "):
            line = "control: " + os.path.join(u.MANIFESTS, "docker", "open.yaml")
        elif line.startswith("    ") and key in drop:
            continue
        elif line.startswith("    ") and key in host_config_changes:
            line = "    %s: %s" % (key, host_config_changes[key])
        elif line.startswith("  user: ") and user is not None:
            line = '  user: "%s"' % user
        out.append(line)
    text = "\n".join(out) + "\n"
    for key, value in host_config_changes.items():  # keys hardened.yaml does not have yet
        if "\n    %s:" % key not in text:
            text = text.replace("    NetworkMode:", "    %s: %s\n    NetworkMode:" % (key, value))
    return text


VARIANTS = {
    # name: (HostConfig changes, keys dropped, rows that must FAIL, user)
    "dk-default-network": ({"NetworkMode": "sandprobe-lab",
                            "ExtraHosts": '["sandprobe-canary:%s"]' % GATEWAY}, (), NET_ROWS | RUNC),
    "dk-no-memory-limit": ({}, ("Memory", "MemorySwap"), {"res.memory-balloon"} | RUNC),
    # The manifest still claims pids: 64, so the bomb's 128 children are over the claim.
    "dk-no-pids-limit": ({}, ("PidsLimit",), {"res.fork-bomb"} | RUNC),
    "dk-tmp-without-size": ({"Tmpfs": '{/tmp: "noexec"}'}, (), {"fs.fill-tmp"} | RUNC),
    # uid 65534 still can't write /, but /var/tmp (mode 1777) takes a binary that runs.
    "dk-writable-root": ({"ReadonlyRootfs": "false"}, (), {"fs.write-exec"} | RUNC),
    # Privileged gives every capability back, whatever CapDrop says.
    # It also turns the seccomp filter off: user namespaces are back (advisory row).
    "dk-privileged": ({"Privileged": "true"}, (), {"priv.capabilities", "priv.userns"} | RUNC),
    # Root in the container: the read-only root and the dropped capabilities still hold.
    "dk-root-user": ({}, (), {"priv.uid"} | RUNC, "0:0"),
    # The daemon's socket inside the sandbox (uid 65534 cannot open it: present is enough);
    # fs.unix-sockets reports it by path (a well-known socket present) without connecting.
    "dk-docker-socket": ({"Binds": '["/var/run/docker.sock:/var/run/docker.sock"]'}, (),
                         {"fs.docker-socket", "fs.unix-sockets"} | RUNC),
    # Without no-new-privileges the image's setuid-root su makes uid 65534 root again.
    "dk-no-new-privs": ({}, ("SecurityOpt",), {"priv.no-new-privs", "priv.setuid"} | RUNC),
    # No seccomp filter: user namespaces are back (the advisory priv.userns row). kernel.syscalls
    # lists the calls but is not judged: the manifest claims no seccomp filter.
    "dk-seccomp-unconfined": ({"SecurityOpt": "[no-new-privileges, seccomp=unconfined]"}, (),
                              {"priv.userns"} | RUNC),
}
# Rows neither PASS nor FAIL in a variant: no claim (reported, not judged), or nothing to try.
NOT_PASS = {
    "kernel.syscalls": "SKIP",  # no variant claims limits.seccomp
    "platform.runtime-class": "SKIP",
}
VARIANT_NOT_PASS = {
    # root without CAP_SETUID cannot drop to an unprivileged uid to try the setuid bit
    ("dk-root-user", "priv.setuid"): "INCONCLUSIVE",
}


class Weakened(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_docker()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-docker-weak-")
        args = ["run", "--suite", SUITE, "--out", os.path.join(cls.tmp.name, "out"),
                "--canary-dir", os.path.join(cls.tmp.name, "canary"), "--jobs", "6",
                "--control", u.LOCAL_MANIFEST,
                "--control", os.path.join(u.MANIFESTS, "docker", "open.yaml"),
                "--canary-bind", GATEWAY]
        for name, (changes, drop, _, *user) in VARIANTS.items():
            path = os.path.join(cls.tmp.name, name + ".yaml")
            text = hardened_with(name, changes, drop, user[0] if user else None)
            with open(path, "w") as f:
                f.write(text)
            args += ["--sandbox", path]
        cls.res = u.run_sandprobe(args, timeout=400)  # 10 variants x 49 rows on a loaded machine
        cls.report = u.report_or_none(os.path.join(cls.tmp.name, "out"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_each_weakness_fails_exactly_its_rows(self):
        self.assertIsNotNone(self.report, self.res.describe())
        for name, (_, _, must_fail, *_) in VARIANTS.items():
            for probe, v in u.verdicts(self.report, name).items():
                want = ("FAIL" if probe in must_fail
                        else VARIANT_NOT_PASS.get((name, probe), NOT_PASS.get(probe, "PASS")))
                with self.subTest(variant=name, probe=probe):
                    self.assertEqual(v["verdict"], want, v["reason"])

    def test_writable_root_weakens_the_evidence(self):
        # EROFS (positive) becomes EACCES for uid 65534 (absence): still contained, said so.
        obs = u.observations(self.report, "dk-writable-root")["fs.write-root"]
        self.assertEqual(obs["evidence_kind"], "absence", obs["reason"])
        hard = u.observations(self.report, "dk-default-network")["fs.write-root"]
        self.assertEqual(hard["evidence_kind"], "positive", hard["reason"])

    def test_no_pids_limit_is_caught_by_the_claim(self):
        obs = u.observations(self.report, "dk-no-pids-limit")["res.fork-bomb"]
        self.assertTrue(obs["label"].startswith("OVER CLAIM") or obs["label"] == "ALL FORKED",
                        obs["label"])
        hard = u.observations(self.report, "dk-default-network")["res.fork-bomb"]
        self.assertEqual(hard["evidence"]["result"]["outcome"], "capped", hard["reason"])

    def test_nothing_left(self):
        self.assertEqual(containers_of(self.report["run_id"]), [])


if __name__ == "__main__":
    unittest.main()
