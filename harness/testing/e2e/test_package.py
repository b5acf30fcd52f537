"""End-to-end: the install layout and the Debian package, from outside the source tree.

InstallPrefix: `cmake --install` into a temporary prefix; the installed binary, started from
/ with no --home and no SANDPROBE_HOME, finds <prefix>/share/sandprobe by itself.

Deb: ci/package builds the .deb from this build (--no-build: ctest runs from it), `dpkg -i`
installs it on this machine (root), `sandprobe run` with no argument at all, from a fresh folder
under /tmp, runs the default suite against /usr/share/sandprobe/manifests/bubblewrap.yaml with its
control local; the matrix must be the one plain bubblewrap earns (loop, balloon and fork bomb
FAIL: it has no bounds of its own). `dpkg -r` must then leave none of the package's files.
Fails, never skips, when not root. Traffic: the default suite's loopback canaries only.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

import e2e_util as u

BUILD = os.path.dirname(os.path.dirname(u.BIN))  # build/bin/sandprobe -> build
# The default suite against plain bubblewrap (README): no timeout, memory or process bounds.
from test_bubblewrap import EXPECTED  # the same run from the source tree: one table of verdicts


def clean_env():
    """The environment minus everything that points sandprobe at the source tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SANDPROBE_HOME", "SANDPROBE_BIN", "SANDPROBE_REAPER")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def dpkg_status(package):
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", package],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


class InstallPrefix(unittest.TestCase):
    def test_installed_tree_is_found_without_home(self):
        u.require_sandprobe()
        with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-prefix-") as prefix:
            r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            home = os.path.join(prefix, "share", "sandprobe")
            for path in ("bin/sandprobe", "bin/sandprobe-reaper",
                         "share/sandprobe/probes/lib/preamble.py",
                         "share/sandprobe/probes/net/dns/probe.yaml",
                         "share/sandprobe/suites/default.yaml",
                         "share/sandprobe/suites/repl-acceptance.yaml",
                         "share/sandprobe/manifests/bubblewrap.yaml",
                         "share/sandprobe/schema/report.schema.json",
                         "share/doc/sandprobe/README.md",
                         "share/doc/sandprobe/ci-templates/github/sandprobe.yml"):
                self.assertTrue(os.path.exists(os.path.join(prefix, path)), path)
            tests = [os.path.join(d, f) for d, _, files in os.walk(home) for f in files
                     if f.startswith("test_") or f == "probe_testing.py"]
            self.assertEqual(tests, [], "probe tests stay in the source tree")
            sandprobe = os.path.join(prefix, "bin", "sandprobe")
            listed = subprocess.run([sandprobe, "list"], capture_output=True, text=True,
                                    cwd="/", env=clean_env(), timeout=60)
            self.assertEqual(listed.returncode, 0, listed.stderr)
            self.assertIn("net.dns", listed.stdout)
            probes = sorted(os.path.relpath(d, os.path.join(home, "probes"))
                            for d, _, files in os.walk(os.path.join(home, "probes"))
                            if "probe.yaml" in files)
            self.assertGreaterEqual(len(probes), 20)
            for probe in probes:  # every installed probe is listed, by its id
                self.assertIn(probe.replace("/", "."), listed.stdout)
            # No source tree in sight: the installed suite validates against the installed probes.
            checked = subprocess.run(
                [sandprobe, "validate", os.path.join(home, "suites", "repl-acceptance.yaml")],
                capture_output=True, text=True, cwd="/", env=clean_env(), timeout=60)
            self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)


class Deb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        if os.geteuid() != 0:
            raise AssertionError("the package test installs a .deb with dpkg: run it as root")
        r = subprocess.run([os.path.join(u.HOME, "ci", "package"), "--no-build"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise AssertionError("ci/package failed:\n" + r.stderr[-4000:])
        cls.deb = r.stdout.strip().splitlines()[-1]
        if dpkg_status("sandprobe") != "unknown" and dpkg_status("sandprobe") != "not-installed":
            subprocess.run(["dpkg", "-r", "sandprobe"], capture_output=True, timeout=120)
        cls.work = tempfile.mkdtemp(prefix="sandprobe-e2e-package-", dir="/tmp")
        cls.installed = subprocess.run(["dpkg", "-i", cls.deb], capture_output=True, text=True,
                                       timeout=300)
        cls.files = []
        cls.res = None
        try:
            if cls.installed.returncode == 0:
                cls.files = subprocess.run(["dpkg", "-L", "sandprobe"], capture_output=True,
                                           text=True).stdout.split("\n")
                cls.res = u.Result(*cls.run_installed())
        finally:
            cls.removed = subprocess.run(["dpkg", "-r", "sandprobe"], capture_output=True,
                                         text=True, timeout=300)
        cls.report = u.report_or_none(os.path.join(cls.work, "reports", "out"))

    @classmethod
    def run_installed(cls):
        import time
        start = time.monotonic()
        # Exactly what a user types after installing: no flags, the default suite and manifest.
        p = subprocess.run(["sandprobe", "run"], capture_output=True, cwd=cls.work,
                           env=dict(clean_env(), PATH="/usr/bin:/bin"), timeout=300,
                           stdin=subprocess.DEVNULL)
        return ["run"], p.returncode, p.stdout, p.stderr, time.monotonic() - start

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_the_package_declares_what_it_needs(self):
        fields = subprocess.run(["dpkg-deb", "-f", self.deb, "Package", "Depends"],
                                capture_output=True, text=True).stdout
        self.assertIn("Package: sandprobe", fields)
        for dep in ("bubblewrap", "python3", "libyaml-cpp", "libfmt", "libcurl", "libpugixml",
                    "libc6", "libstdc++6"):
            self.assertIn(dep, fields)
        self.assertEqual(self.installed.returncode, 0, self.installed.stderr)

    def test_the_installed_binary_runs_the_default_suite_from_tmp(self):
        self.assertIsNotNone(self.res, "not installed: " + self.installed.stderr)
        self.assertIsNotNone(self.report, "no report.json\n" + self.res.describe())
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        self.assertEqual(self.report["suite"], "default")
        arms = {a["name"]: a for a in self.report["arms"]}
        self.assertEqual(arms["bubblewrap"]["source"],
                         "/usr/share/sandprobe/manifests/bubblewrap.yaml")
        self.assertEqual(arms["local"]["role"], "control")
        self.assertEqual(arms["local"]["source"], "/usr/share/sandprobe/manifests/local.yaml")
        verdicts = u.verdicts(self.report, "bubblewrap")
        with open(os.path.join(u.HOME, "suites", "default.yaml")) as f:
            suite = yaml.safe_load(f)
        rows = [e if isinstance(e, str) else e["id"] for e in suite["probes"]]
        self.assertEqual(sorted(verdicts), sorted(rows))
        self.assertEqual(sorted(rows), sorted(EXPECTED))
        for probe, v in verdicts.items():
            want = EXPECTED[probe]
            self.assertEqual(v["verdict"], want, "%s: %s" % (probe, v["reason"]))
            if want == "PASS":
                self.assertEqual(v["validated_by"], "local", probe)
        counts = {k: sum(1 for w in EXPECTED.values() if w == k)
                  for k in ("PASS", "FAIL", "INCONCLUSIVE", "SKIP")}
        self.assertIn("bubblewrap: %(PASS)d PASS, %(FAIL)d FAIL, %(INCONCLUSIVE)d INCONCLUSIVE, "
                      "%(SKIP)d SKIP, 0 ERROR" % counts, self.res.stdout)
        for name in ("matrix.md", "junit.xml"):
            self.assertTrue(os.path.exists(os.path.join(self.work, "reports", "out", name)))

    def test_dpkg_r_leaves_nothing(self):
        self.assertEqual(self.removed.returncode, 0, self.removed.stderr)
        self.assertIn(dpkg_status("sandprobe"), ("not-installed", "config-files", "unknown"))
        owned = [f for f in self.files if f.startswith(("/usr/bin/sandprobe",
                                                         "/usr/share/sandprobe",
                                                         "/usr/share/doc/sandprobe"))]
        self.assertGreater(len(owned), 50, "dpkg -L listed the package's files")
        self.assertEqual([f for f in owned if os.path.lexists(f)], [])
        self.assertFalse(os.path.exists("/usr/bin/sandprobe"))
        self.assertFalse(os.path.exists("/usr/share/sandprobe"))


if __name__ == "__main__":
    unittest.main()
