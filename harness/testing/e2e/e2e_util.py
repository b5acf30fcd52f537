"""Shared helpers for the end-to-end tests: they run the REAL sandprobe binary against REAL
bubblewrap and real processes (stdlib only).

Environment (set by harness/testing/CMakeLists.txt; defaults for running by hand from this folder):
  SANDPROBE_BIN   the sandprobe executable (sandprobe-reaper must sit beside it)
  SANDPROBE_HOME  the source tree with probes/, suites/, manifests/

Traffic rule: every network parameter written here is a `{canary.*}` placeholder, i.e. one of the
harness's own loopback listeners. No test targets any other address.
Every file a test writes goes under a tempfile.TemporaryDirectory().
"""
import base64
import hashlib
import json
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HOME = os.path.abspath(os.environ.get("SANDPROBE_HOME") or os.path.join(HERE, "..", "..", ".."))
BIN = os.path.abspath(os.environ.get("SANDPROBE_BIN") or os.path.join(HOME, "build", "bin", "sandprobe"))
MANIFESTS = os.path.join(HOME, "manifests")
LOCAL_MANIFEST = os.path.join(MANIFESTS, "local.yaml")
BWRAP_MANIFEST = os.path.join(MANIFESTS, "bubblewrap.yaml")
BOUNDED_MANIFEST = os.path.join(MANIFESTS, "bubblewrap-bounded.yaml")

# The rows of suites/default.yaml with their canary parameters (loopback only).
DEFAULT_PARAMS = {
    "cred.sa-token": {"canary_path": "{canary.token_file}"},
    "cred.env-secrets": {"canary_name": "{canary.env_name}", "canary_sha256": "{canary.env_sha256}",
                         "canaries": "{canary.env_set}"},
    "cred.cloud-metadata": {"targets": ["{canary.http}", "{canary.http6}"],
                            "canary_sha256": "{canary.cloud_sha256}"},
    "net.metadata": {"target": "{canary.http}"},
    "net.metadata-imdsv2": {"target": "{canary.http}"},
    "net.metadata-gcp": {"target": "{canary.http}"},
    "net.metadata-azure": {"target": "{canary.http}"},
    "net.metadata-ipv6": {"target": "{canary.http6}"},
    "net.metadata-alt": {"target": "{canary.http}"},
    "net.dns": {"server": "{canary.dns}"},
    "net.http-by-name": {"url": "http://localhost:{canary.http_port}/"},
    "net.tcp-by-ip": {"target": "{canary.tcp}", "transport": ["socket", "io_uring"]},
    "net.k8s-api": {"target": "{canary.http}", "scheme": "http"},
    "net.udp": {"target": "{canary.udp}"},
    "net.interfaces": None,
    "net.gateway": {"targets": ["{canary.tcp}"]},
    "net.docker-api": {"targets": ["{canary.docker}"]},
    "net.sibling": {"allow": ["127.0.0.0/8"]},
    "res.cpu-loop": None,
    "res.memory-balloon": None,
    "res.fork-bomb": None,
    "fs.fill-tmp": None,
    "fs.dev-shm": None,
    "fs.write-root": None,
    "proc.host-pids": None,
    "proc.outlives-call": {"canary": "{canary.tcp}"},
    "platform.runtime-class": None,
    "fs.write-exec": None,
    "kernel.syscalls": None,
    "priv.userns": None,
    "priv.setuid": None,
    # What a careful sandbox may still hand over from its caller (test_caller_leaks.py).
    "cred.keyring": {"session_key": "{canary.key_session}", "user_key": "{canary.key_user}",
                     "canary_sha256": "{canary.key_sha256}"},
    "net.abstract-unix": None,
    "fs.unix-sockets": {"canary_path": "{canary.unix_socket}"},
    "fs.inherited-fds": {"token_sha256": "{canary.token_sha256}"},
    "net.icmp": {"target": "{canary.icmp}"},
    "net.host-loopback": {"port": "{canary.loopback_port}", "allow": ["127.0.0.0/8"]},
    "proc.tty-inject": None,
}
ALL_PROBES = sorted(DEFAULT_PARAMS)
CRED_ROWS = ["cred.sa-token", "cred.env-secrets", "cred.cloud-metadata"]
# The cloud metadata rows beside net.metadata; the IPv6 one is aimed at [::1].
METADATA_ROWS = ["net.metadata-imdsv2", "net.metadata-gcp", "net.metadata-azure",
                 "net.metadata-ipv6", "net.metadata-alt"]
NET_ROWS = ["net.metadata", "net.dns", "net.http-by-name", "net.tcp-by-ip", "net.k8s-api",
            "net.udp", "net.interfaces"] + METADATA_ROWS
FS_ROWS = ["fs.fill-tmp", "fs.write-root"]
# Lateral movement: the host's side at the gateway, a Docker API on TCP, a sibling
# sandbox of the same arm at the same moment (a concurrent pair: ~2 x overlap_s per arm).
LATERAL_ROWS = ["net.gateway", "net.docker-api", "net.sibling"]
# Everything but the two resource rows (the loop costs a whole harness deadline per arm).
FAST_ROWS = CRED_ROWS + NET_ROWS + FS_ROWS + ["platform.runtime-class"]
FAST_FLAGS = ["--default-timeout", "2", "--grace", "2"]
# The caller's keyrings, its abstract and pathname unix sockets, the descriptors it left open.
CALLER_ROWS = ["cred.keyring", "net.abstract-unix", "fs.unix-sockets", "fs.inherited-fds"]

BWRAP_PROBE_ARGV = ["--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
                    "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                    "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
                    "/usr/bin/python3", "-c", "print('ok')"]


def sh(*argv):
    """Runs a command; raises AssertionError with its output when it fails."""
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError("%s: exit %d: %s" % (" ".join(argv), r.returncode,
                                                 (r.stderr or r.stdout).strip()[:500]))
    return r.stdout


def require_sandprobe():
    """The binary and its reaper exist; raise (a loud error, never a skip) otherwise."""
    if not os.access(BIN, os.X_OK):
        raise AssertionError("sandprobe binary not found at %s (build it: cmake --build build, "
                             "or set SANDPROBE_BIN)" % BIN)
    reaper = os.path.join(os.path.dirname(BIN), "sandprobe-reaper")
    if not os.access(reaper, os.X_OK):
        raise AssertionError("sandprobe-reaper not found beside sandprobe at %s" % reaper)


def require_bwrap():
    """bubblewrap is installed and can create every namespace here: else FAIL loudly."""
    require_sandprobe()
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise AssertionError("bwrap is not on PATH: the end-to-end tests need real bubblewrap "
                             "(apt-get install -y bubblewrap); they never skip")
    try:
        r = subprocess.run([bwrap] + BWRAP_PROBE_ARGV, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("bwrap --unshare-all did not finish in 30 s")
    if r.returncode != 0 or r.stdout.strip() != b"ok":
        raise AssertionError(
            "bubblewrap cannot create namespaces on this machine (exit %d): %s; the end-to-end "
            "tests need it (unprivileged user namespaces, or run as root)"
            % (r.returncode, r.stderr.decode("utf-8", "replace").strip()[:500]))


class Result:
    """A finished sandprobe invocation: exit code, raw and decoded output."""

    def __init__(self, args, returncode, stdout, stderr, wall_s):
        self.args, self.returncode, self.wall_s = args, returncode, wall_s
        self.stdout_bytes, self.stderr_bytes = stdout, stderr
        self.stdout = stdout.decode("utf-8", "replace")
        self.stderr = stderr.decode("utf-8", "replace")

    def describe(self):
        return "sandprobe %s\nexit %s after %.1f s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
            " ".join(self.args), self.returncode, self.wall_s, self.stdout[-6000:],
            self.stderr[-4000:])


def run_sandprobe(args, timeout=120, env=None, cwd=None):
    import time
    full_env = dict(os.environ)
    full_env.setdefault("SANDPROBE_HOME", HOME)
    if env:
        full_env.update(env)
    start = time.monotonic()
    try:
        p = subprocess.run([BIN] + list(args), capture_output=True, timeout=timeout, env=full_env,
                           cwd=cwd, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("sandprobe %s did not finish within %d s; stdout so far:\n%s" % (
            " ".join(args), timeout, (exc.stdout or b"").decode("utf-8", "replace")[-4000:]))
    return Result(list(args), p.returncode, p.stdout, p.stderr, time.monotonic() - start)


def write_suite(directory, name, probe_ids, params=None):
    """A suite YAML listing probe_ids (with DEFAULT_PARAMS unless params overrides)."""
    lines = ["name: %s" % name, "description: e2e focused suite", "probes:"]
    for pid in probe_ids:
        p = (params or {}).get(pid, DEFAULT_PARAMS.get(pid))
        lines.append("  - id: %s" % pid)
        if p:
            lines.append("    params: %s" % json.dumps(p))  # JSON is YAML flow syntax
    path = os.path.join(directory, "%s.yaml" % name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def manifest_argv(path):
    """The `argv: [...]` flow list of a command/local manifest (plain or double-quoted items)."""
    with open(path) as f:
        text = f.read()
    m = re.search(r"^\s*argv:\s*\[(.*?)\]", text, re.S | re.M)
    if not m:
        raise AssertionError("no argv: [...] in %s" % path)
    items = []
    for raw in re.findall(r'"(?:[^"\\]|\\.)*"|[^,\s][^,]*', m.group(1)):
        raw = raw.strip()
        items.append(json.loads(raw) if raw.startswith('"') else raw)
    return items


def write_manifest(path, name, argv, control=None, limits=None, description="", driver="command",
                   extra_lines=()):
    lines = ["name: %s" % name, "driver: %s" % driver]
    if description:
        lines.append("description: %s" % json.dumps(description))
    if control:
        lines.append("control: %s" % json.dumps(control))
    if limits:
        lines.append("limits: %s" % json.dumps(limits))
    lines.extend(extra_lines)
    lines += ["%s:" % driver, "  argv: %s" % json.dumps(argv)]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def report_or_none(out_dir):
    """report.json of a finished run, or None when it wrote none (RunCase.setUp then fails)."""
    if os.path.exists(os.path.join(out_dir, "report.json")):
        return load_report(out_dir)
    return None


class RunCase(unittest.TestCase):
    """Tests of one sandprobe run made in setUpClass, which sets cls.tmp (a TemporaryDirectory),
    cls.res (run_sandprobe's result) and cls.report (report_or_none)."""

    @classmethod
    def make_tmp(cls, prefix):
        """cls.tmp, a TemporaryDirectory removed by tearDownClass, and in it cls.out and
        cls.canary_dir (out/ and canary/, made by sandprobe); returns its path."""
        cls.tmp = tempfile.TemporaryDirectory(prefix=prefix)
        cls.out = os.path.join(cls.tmp.name, "out")
        cls.canary_dir = os.path.join(cls.tmp.name, "canary")
        return cls.tmp.name

    @classmethod
    def run_once(cls, args, timeout=120, **kwargs):
        """cls.res: `sandprobe run --out OUT --canary-dir CANARY ARGS...` (after make_tmp);
        cls.report: its report.json, or None."""
        cls.res = run_sandprobe(["run", "--out", cls.out, "--canary-dir", cls.canary_dir] +
                                list(args), timeout=timeout, **kwargs)
        cls.report = report_or_none(cls.out)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.assertIsNotNone(self.report, "no report.json\n" + self.res.describe())


TAP_CHECK = os.path.join(HERE, "..", "tap_check.js")


def tap_check(path, **expect):
    """harness/testing/tap_check.js on `path`: node-tap's tap-parser (Debian's node-tap-parser) in
    strict mode, with expectations (ok="true", points=N, bailout="false"); its JSON summary. Fails
    (never skips) when node or the parser is missing."""
    node = shutil.which("node")
    if node is None:
        raise AssertionError("node is not on PATH: install nodejs and node-tap-parser "
                             "(ci/bootstrap does)")
    args = [node, TAP_CHECK, path]
    for key, value in expect.items():
        args += ["--" + key, str(value)]
    env = dict(os.environ, NODE_PATH="/usr/share/nodejs")
    r = subprocess.run(args, capture_output=True, timeout=60, env=env)
    if r.returncode != 0:
        raise AssertionError("tap_check %s failed (exit %d):\n%s\n%s" % (
            path, r.returncode, r.stdout.decode("utf-8", "replace")[-4000:],
            r.stderr.decode("utf-8", "replace")[-2000:]))
    return json.loads(r.stdout)


def load_report(out_dir):
    with open(os.path.join(out_dir, "report.json"), encoding="utf-8") as f:
        return json.load(f)


def verdicts(report, candidate):
    return {v["probe"]: v for v in report["verdicts"] if v["candidate"] == candidate}


def observations(report, arm):
    return {o["probe"]: o for o in report["observations"] if o["arm"] == arm}


class ReportReading:
    """Reading one run's report.json (cls.report, cls.res) in a unittest.TestCase: shared by the
    fake-cluster and real-cluster tests."""

    def setUp(self):
        self.assertIsNotNone(self.report, "no report.json\n" + self.res.describe())

    def cell(self, arm, probe):
        return observations(self.report, arm)[probe]

    def verdict(self, arm, probe):
        return verdicts(self.report, arm)[probe]

    def brief(self, arm, probe):
        """One line for an assertion message, what decides first: the arm's verdict and reason
        (if it is a candidate), its cell's label, reason, result and driver facts, and every
        other arm's label for that probe (a CI log keeps only the first few hundred characters
        of a message: ci/test)."""
        v = verdicts(self.report, arm).get(probe)
        cell = self.cell(arm, probe)
        ev = cell.get("evidence", {})
        others = {o["arm"]: o.get("label") for o in self.report["observations"]
                  if o["probe"] == probe and o["arm"] != arm}
        return json.dumps({"verdict": v and [v["verdict"], v["reason"]],
                           "cell": [cell.get("label"), cell.get("reason")],
                           "result": ev.get("result"), "facts": ev.get("driver_facts"),
                           "others": others}, sort_keys=False)

    def note(self, prefix):
        """The one report note starting with `prefix` (e.g. "k8s-deny-egress: ruled out")."""
        found = [n for n in self.report["notes"] if n.startswith(prefix)]
        self.assertEqual(len(found), 1, (prefix, self.report["notes"]))
        return found[0]


def arm_names(report, role):
    return [a["name"] for a in report["arms"] if a["role"] == role]


def outside_tmp_dir():
    """A parent for temp dirs that is NOT under /tmp (bubblewrap gives the sandbox its own /tmp)."""
    for base in ("/var/tmp", os.path.expanduser("~/.cache")):
        try:
            os.makedirs(base, exist_ok=True)
            probe = tempfile.mkdtemp(prefix=".sandprobe-e2e-check-", dir=base)
            os.rmdir(probe)
        except OSError:
            continue
        if not os.path.realpath(base).startswith("/tmp"):
            return base
    raise AssertionError("no writable directory outside /tmp (tried /var/tmp, ~/.cache)")


def nonce_hash_of_tagged(tag):
    """The nonce_hash (sha256 prefix) of the run whose processes carry SANDPROBE_E2E_TAG=tag,
    read from a deployed script's config in their cmdline; None when none is running."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        environ = _read("/proc/%s/environ" % name) or b""
        if ("SANDPROBE_E2E_TAG=%s" % tag).encode() not in environ.split(b"\0"):
            continue
        m = _CONFIG.search(_read("/proc/%s/cmdline" % name) or b"")
        if m:
            try:
                nonce = json.loads(base64.b64decode(m.group(1)))["nonce"]
            except (ValueError, KeyError):
                continue
            return hashlib.sha256(nonce.encode()).hexdigest()[:12]
    return None


def fill_files_of_run(nonce_hash, directory="/tmp"):
    """fs.fill-tmp files (.sandprobe-fill-<nonce>-<invocation>) of one run left in directory."""
    left = []
    for name in os.listdir(directory):
        parts = name.split("-")
        if name.startswith(".sandprobe-fill-") and len(parts) >= 4:
            if hashlib.sha256(parts[2].encode()).hexdigest()[:12] == nonce_hash:
                left.append(os.path.join(directory, name))
    return left


# --- selftest probes -------------------------------------------------------------------------

SELFTEST_DESCRIPTOR = """\
id: selftest.{name}
label: {label}
category: selftest
description: >-
  e2e selftest probe ({name}). Exposed when the harness's planted env secret is visible (the
  local control), contained otherwise (a candidate with an empty environment).
requires_control: true
drivers: [all]
params:
  canary_name: {{default: "", description: "name of the planted canary variable"}}
classify:
  outcomes: {{exposed_outcome: exposed, contained_outcome: contained, error: unknown}}
  killed: unknown
  deadline: unknown
"""

# Prepended to every selftest probe body (after the harness's preamble).
SELFTEST_PRELUDE = """\
EXPOSED = bool(PARAMS.get("canary_name")) and PARAMS["canary_name"] in os.environ
OUTCOME = "exposed_outcome" if EXPOSED else "contained_outcome"
emit("start")
"""


def make_selftest_home(base, probes):
    """A sandprobe home under base: a copy of the repo's probes/ plus probes/selftest/<name>/
    for each name -> (label, body). Returns (home, suite path, candidate manifest path); the
    candidate is `env -i python3` (no isolation but an empty environment), its control local."""
    home = os.path.join(base, "home")
    shutil.copytree(os.path.join(HOME, "probes"), os.path.join(home, "probes"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name, (label, body) in probes.items():
        d = os.path.join(home, "probes", "selftest", name)
        os.makedirs(d)
        with open(os.path.join(d, "probe.yaml"), "w") as f:
            f.write(SELFTEST_DESCRIPTOR.format(name=name, label=label))
        with open(os.path.join(d, "probe.py"), "w") as f:
            f.write(SELFTEST_PRELUDE + body)
    ids = ["selftest.%s" % n for n in probes]
    suite = write_suite(base, "selftest", ids,
                        params={i: {"canary_name": "{canary.env_name}"} for i in ids})
    candidate = write_manifest(os.path.join(base, "env-i.yaml"), "env-i",
                               ["env", "-i", python_for_env_i(), "-u", "-c", "{script}"],
                               control=LOCAL_MANIFEST,
                               description="no isolation but an empty environment")
    return home, suite, candidate


# --- the run-code fixture (harness/testing/runcode_fixture/fixture.py) -----------------------

FIXTURE = os.path.join(HOME, "harness", "testing", "runcode_fixture", "fixture.py")
CRED_NAME = "SANDPROBE_FIXTURE_API_KEY"


class Fixture:
    """fixture.py as a child process: started, READY read, stopped with SIGTERM (SIGKILL after
    10 s, which fails the test: it must stop by itself)."""

    def __init__(self, mode, *args, cwd=None, env=None):
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen([sys.executable, FIXTURE, "--mode", mode] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                     env=full_env, stdin=subprocess.DEVNULL)
        ready, line = select.select([self.proc.stdout], [], [], 20)[0], b""
        if ready:
            line = self.proc.stdout.readline()
        if not line.startswith(b"READY http://127.0.0.1:"):
            self.proc.kill()
            raise AssertionError("fixture did not start: %r %s" % (
                line, self.proc.stderr.read().decode(errors="replace")[-2000:]))
        self.url = line.split()[1].decode()

    def stop(self):
        """SIGTERM; returns the exit code. Raises when it had to be SIGKILLed."""
        try:
            if self.proc.poll() is not None:
                return self.proc.returncode
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("the fixture ignored SIGTERM for 10 s")
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()


def write_http_manifest(path, name, url, timeout_s=3, extra=()):
    lines = ["name: %s" % name, "driver: http", "control: %s" % LOCAL_MANIFEST,
             "limits: {timeout: %ds}" % timeout_s, "http:", "  url: %s/execute" % url,
             "  preset: code-json", "  health: %s/healthz" % url] + list(extra)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def planted_credential(directory):
    """A credential of the fixture's own: (env dict, token file path, params for the cred rows)."""
    value = "fixture-secret-" + secrets.token_hex(12)
    token = os.path.join(directory, "fixture-token")
    with open(token, "w") as f:
        f.write("fixture-token-" + secrets.token_hex(12))
    params = {"cred.env-secrets": {"canary_name": CRED_NAME,
                                   "canary_sha256": hashlib.sha256(value.encode()).hexdigest()},
              "cred.sa-token": {"canary_path": token}}
    return {CRED_NAME: value}, token, params


# The rows the issue names, with loopback canaries; output-flood sized under the driver's 16 MiB
# response cap (kept whole; a bigger answer is read streaming, test_http.DefaultFloodIsCounted)
# to keep the matrix quick.
MATRIX_PARAMS = {
    "net.tcp-by-ip": {"target": "{canary.tcp}"},
    "net.http-by-name": {"url": "http://localhost:{canary.http_port}/"},
    "net.dns": {"server": "{canary.dns}"},
    "state.persists": {"overlap_s": 1.5},
    "proc.sibling": {"overlap_s": 1.5},
    "proc.outlives-call": {"canary": "{canary.tcp}"},
    "priv.uid": None,
    "priv.capabilities": None,
    "priv.no-new-privs": None,
    "res.output-flood": {"total_mib": 8},
}
MATRIX_ROWS = ["cred.env-secrets", "cred.sa-token"] + list(MATRIX_PARAMS)


def state_files(report, *directories):
    """state.persists marks of this run left in `directories`: ".sandprobe-state-<nonce>-<inv>-c<k>-"
    names with one of the report's invocation ids (other runs, e.g. a test module running in
    parallel, plant their own)."""
    invocations = {o["invocation"] for o in report["observations"] if o.get("invocation")}
    directories = list(directories) + [os.path.expanduser("~")]  # the local arm's $HOME marks
    return [os.path.join(d, n) for d in directories for n in os.listdir(d)
            if n.startswith(".sandprobe-state-")
            and any("-%s-c" % inv in n for inv in invocations)]


def run_fixture_matrix(cls, mode, fixture_cwd):
    """The run of the fixture matrices (test_http.py, test_docker_http.py), for a RunCase's
    setUpClass after make_tmp: fixture.py in `mode` (cwd fixture_cwd) with a planted credential,
    MATRIX_ROWS and res.cpu-loop against it with the local control. Sets on cls: run_cwd, token,
    secret, fixture, res, wall_s, report, fixture_exit, left_before_stop and left_after_stop (this
    run's processes before and after the fixture stopped)."""
    import time
    base = cls.tmp.name
    cls.run_cwd = os.path.join(base, "run")
    os.makedirs(cls.run_cwd)
    env, cls.token, cred_params = planted_credential(base)
    cls.secret = env[CRED_NAME]
    cls.fixture = Fixture(mode, "--timeout", "3", cwd=fixture_cwd, env=env)
    try:
        params = dict(MATRIX_PARAMS, **cred_params)
        params["res.cpu-loop"] = {"canary": "{canary.tcp}", "max_s": 30}
        suite = write_suite(base, "http-" + mode, MATRIX_ROWS + ["res.cpu-loop"], params)
        manifest = write_http_manifest(os.path.join(base, mode + ".yaml"), "runcode-" + mode,
                                       cls.fixture.url)
        start = time.monotonic()
        cls.res = run_sandprobe(
            ["run", "--suite", suite, "--sandbox", manifest, "--control", LOCAL_MANIFEST,
             "--out", cls.out, "--canary-dir", cls.canary_dir, "--jobs", "2",
             "--format", "json"] + FAST_FLAGS, timeout=80, env=env, cwd=cls.run_cwd)
        cls.wall_s = time.monotonic() - start
        cls.report = report_or_none(cls.out)
        cls.left_before_stop = sandprobe_processes(
            cls.report["nonce_hash"]) if cls.report else []
    finally:
        cls.fixture_exit = cls.fixture.stop()
    cls.left_after_stop = sandprobe_processes(cls.report["nonce_hash"]) if cls.report else []


# --- processes -------------------------------------------------------------------------------

_CONFIG = re.compile(rb'_SANDPROBE = "([A-Za-z0-9+/=]+)"')


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def sandprobe_processes(nonce_hash=None, tag=None):
    """Live processes whose cmdline holds `# sandprobe probe` or `sandprobe-reaper`.

    With nonce_hash/tag given, only those of one run: the deployed script's config carries the
    nonce (matched by its sha256 prefix, as report.json's nonce_hash), and every process the
    harness starts inherits its environment (tag=VALUE of SANDPROBE_E2E_TAG), except what a
    sandbox started with a cleared environment, which the nonce covers. Zombies are ignored.
    Returns [(pid, short description)].
    """
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        cmdline = _read("/proc/%s/cmdline" % name)
        if not cmdline or (b"# sandprobe probe" not in cmdline and b"sandprobe-reaper" not in cmdline):
            continue
        stat = _read("/proc/%s/stat" % name) or b""
        state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] if b")" in stat else b"?"
        if state == b"Z":
            continue
        if nonce_hash is not None or tag is not None:
            ours = False
            m = _CONFIG.search(cmdline)
            if m and nonce_hash is not None:
                try:
                    cfg = json.loads(base64.b64decode(m.group(1)))
                    ours = hashlib.sha256(cfg["nonce"].encode()).hexdigest()[:12] == nonce_hash
                except (ValueError, KeyError):
                    pass
            if not ours and tag is not None:
                environ = _read("/proc/%s/environ" % name) or b""
                ours = ("SANDPROBE_E2E_TAG=%s" % tag).encode() in environ.split(b"\0")
            if not ours:
                continue
        argv = cmdline.split(b"\0")
        found.append((int(name), " ".join(a.decode("utf-8", "replace")[:60] for a in argv[:6])))
    return found


# --- junit ---------------------------------------------------------------------------------

def check_junit(path, report):
    """junit.xml parses; every count attribute matches its children; one testcase per verdict.
    Returns {candidate: {probe: "failure"|"error"|"skipped"|"ok"}}. Raises AssertionError."""
    import xml.etree.ElementTree as ET
    root = ET.parse(path).getroot()
    if root.tag != "testsuites":
        raise AssertionError("junit root is <%s>, expected <testsuites>" % root.tag)
    out, totals = {}, {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root.findall("testsuite"):
        if suite.get("name", "").startswith("acceptance criteria: "):
            # the checklist (report["criteria"]): counted in the totals, one testcase a criterion
            totals["tests"] += len(suite.findall("testcase"))
            totals["failures"] += sum(1 for c in suite.findall("testcase")
                                      if c.find("failure") is not None)
            continue
        cases = suite.findall("testcase")
        kinds = {}
        for c in cases:
            found = [k for k in ("failure", "error", "skipped") if c.find(k) is not None]
            if len(found) > 1:
                raise AssertionError("testcase %s has %s" % (c.get("name"), found))
            kinds[c.get("name").split(" ")[0]] = found[0] if found else "ok"
        counts = {"tests": len(cases)}
        for k, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            counts[attr] = sum(1 for v in kinds.values() if v == k)
        for attr, n in counts.items():
            if suite.get(attr) != str(n):
                raise AssertionError("testsuite %s: %s=%s but %d such testcases" % (
                    suite.get("name"), attr, suite.get(attr), n))
            totals[attr] += n
        out[suite.get("name")] = kinds
    for attr, n in totals.items():
        if root.get(attr) != str(n):
            raise AssertionError("testsuites: %s=%s but %d in its suites" % (attr, root.get(attr), n))
    want = {"FAIL": "failure", "ERROR": "error", "INCONCLUSIVE": "error", "SKIP": "skipped",
            "PASS": "ok"}
    for v in report["verdicts"]:
        got = out.get(v["candidate"], {}).get(v["probe"])
        if got != want[v["verdict"]]:
            raise AssertionError("junit %s/%s is %r, verdict %s" % (v["candidate"], v["probe"],
                                                                 got, v["verdict"]))
    if sum(len(k) for k in out.values()) != len(report["verdicts"]):
        raise AssertionError("junit has %d testcases, report.json %d verdicts" % (
            sum(len(k) for k in out.values()), len(report["verdicts"])))
    return out


# --- text checks -----------------------------------------------------------------------------

CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")  # every C0 control but \t and \n, and DEL


def markdown_outside_code(text):
    """Lines of a Markdown document outside fenced code blocks, and the number of blocks.

    A block opens with a line of >= 3 backticks (optional info string) and closes at the first
    line made of at least as many backticks and nothing else (CommonMark).
    """
    lines, blocks, fence = [], 0, None
    for line in text.split("\n"):
        if fence is None:
            m = re.match(r"^(`{3,})[^`]*$", line)
            if m:
                fence, blocks = len(m.group(1)), blocks + 1
                continue
            lines.append(line)
        elif re.match(r"^`{%d,}\s*$" % fence, line):
            fence = None
    if fence is not None:
        raise AssertionError("a fenced code block is never closed")
    return lines, blocks


def unescaped_pipes(line):
    """'|' characters not preceded by a backslash."""
    return len(re.findall(r"(?<!\\)\|", line))


def python_for_env_i():
    """A real Python interpreter path that runs with an empty environment (not a pyenv shim)."""
    return os.path.realpath(sys.executable)
