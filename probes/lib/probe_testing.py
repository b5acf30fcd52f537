"""What the probe tests share: assembling and running a probe as deployed, reading its records,
the probe descriptors, bubblewrap, and small twins of the harness's canaries on 127.0.0.1.

The tests live beside what they test: probes/<category>/<name>/test_<name>.py (dashes become
underscores) for each probe, probes/lib/test_*.py for the preamble, the assembler and the
catalogue as a whole. ctest runs each file as its own entry (label "probes"); by hand:

    PYTHONPATH=probes/lib python3 -m unittest discover -s probes/net/dns

Every probe is assembled with assemble.py exactly as deployed and run as `python3 -u -c SCRIPT`.
Traffic rule: every listener binds 127.0.0.1 and every target is 127.0.0.1 (or "localhost" from
/etc/hosts); no test may send a packet anywhere else, so the system-resolver mode of net.dns is
never run; net.metadata and net.dns have no default target. The bubblewrap tests fail (never
skip) when bwrap is missing or cannot create namespaces.

Only tests use PyYAML (Debian's python3-yaml); the probes themselves are standard library only.
"""
import json
import os
import secrets
import shutil
import signal
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

LIB = os.path.dirname(os.path.abspath(__file__))
PROBES = os.path.dirname(LIB)
ASSEMBLE = os.path.join(LIB, "assemble.py")
PYTHON = os.environ.get("SANDPROBE_TEST_PYTHON") or shutil.which("python3") or sys.executable
DEBIAN_PYTHON = "/usr/bin/python3"  # what the probe image and bubblewrap run
MARK = "@@sandprobe"
MIB = 1 << 20

BWRAP = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
         "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
         "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
         "--remount-ro", "/", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"]

# A self-signed test-only certificate (CN=sandprobe-test) for the TLS canary; never trusted.
TEST_KEY_AND_CERT = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgw/n2jQwXuQ/22nOn
ax52U8uGotVYb+HUmNzFz9ljK3ehRANCAASnjoo1CeMQ73ordGygh8cx4nkOXWB7
hit+PWUKm6U8ZR79Go0okobReMWvvP1tPcPyNbWnRY8rPA2fxZ4AfwnI
-----END PRIVATE KEY-----
-----BEGIN CERTIFICATE-----
MIIBiTCCAS+gAwIBAgIULNA8gHoeadYgi/w9oaEQKvAPD9gwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOc2FuZHByb2JlLXRlc3QwIBcNMjYxMTI5MTAzNDIzWhgPMjEy
NjExMDUxMDM0MjNaMBkxFzAVBgNVBAMMDnNhbmRwcm9iZS10ZXN0MFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEp46KNQnjEO96K3RsoIfHMeJ5Dl1ge4Yrfj1lCpul
PGUe/RqNKJKG0XjFr7z9bT3D8jW1p0WPKzwNn8WeAH8JyKNTMFEwHQYDVR0OBBYE
FE5CJiwFYRTKv/7JyUFhIoK2NQ68MB8GA1UdIwQYMBaAFE5CJiwFYRTKv/7JyUFh
IoK2NQ68MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgA5gyvSqI
K8wZhHoC/oAVPp8TrYF1AoBoxh4YpJf95DICIQCUf8l/kA3UysKthRXIkz1zZN1T
E47BZAWZZzN5y8NaqQ==
-----END CERTIFICATE-----
"""


# ----------------------------------------------------------------------------- the catalogue

def probe_dir(probe_id):
    category, name = probe_id.split(".", 1)
    return os.path.join(PROBES, category, name)


def all_probe_ids():
    ids = []
    for category in sorted(os.listdir(PROBES)):
        cdir = os.path.join(PROBES, category)
        if category == "lib" or not os.path.isdir(cdir):
            continue
        ids += ["%s.%s" % (category, n) for n in sorted(os.listdir(cdir))
                if os.path.isfile(os.path.join(cdir, n, "probe.yaml"))]
    return ids


def descriptor(probe_id):
    """probe.yaml as a dict, keys in file order. The harness reads it with yaml-cpp."""
    with open(os.path.join(probe_dir(probe_id), "probe.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def scratch_probe(directory, probe_id, body):
    """A throw-away probe folder: a one-line probe.yaml and the given probe.py body."""
    with open(os.path.join(directory, "probe.yaml"), "w") as f:
        f.write("id: %s\n" % probe_id)
    with open(os.path.join(directory, "probe.py"), "w") as f:
        f.write(body)


# ----------------------------------------------------------------------------- running probes

def new_ids():
    """A fresh (nonce, invocation) pair, shaped as the harness makes them."""
    return secrets.token_hex(8), "i" + secrets.token_hex(3)


def assemble(directory, params, nonce, invocation):
    out = subprocess.run([sys.executable, ASSEMBLE, directory, "--params", json.dumps(params),
                          "--nonce", nonce, "--invocation", invocation],
                         capture_output=True, text=True, check=True)
    return out.stdout


class Run:
    """One probe execution: its records (nonce-tagged lines only) and raw process facts."""

    def __init__(self, nonce, invocation, stdout, stderr, returncode):
        self.nonce, self.invocation = nonce, invocation
        self.stdout, self.stderr, self.returncode = stdout, stderr, returncode
        prefix = "%s %s " % (MARK, nonce)
        lines = stdout.splitlines()
        self.records = [json.loads(l[len(prefix):]) for l in lines if l.startswith(prefix)]
        self.other_lines = [l for l in lines if not l.startswith(prefix)]

    def kinds(self, kind):
        return [r for r in self.records if r["kind"] == kind]

    @property
    def result(self):
        results = self.kinds("result")
        assert len(results) == 1, "want exactly one result, got %r\nstderr: %s" % (
            self.records, self.stderr)
        return results[0]


def start_probe(probe_id, params, prefix=(), python=PYTHON, env=None, preexec_fn=None,
                directory=None, ids=None, pass_fds=()):
    """ids: (nonce, invocation) to deploy with (default: fresh ones, new_ids()); pass_fds: the
    descriptors the probe (or its prefix) inherits, as a leaky launcher would leave them."""
    nonce, invocation = ids or new_ids()
    script = assemble(directory or probe_dir(probe_id), params, nonce, invocation)
    proc = subprocess.Popen(list(prefix) + [python, "-u", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=preexec_fn,
                            pass_fds=pass_fds)
    return proc, nonce, invocation


def run_probe(probe_id, params, timeout=30, **kwargs):
    proc, nonce, invocation = start_probe(probe_id, params, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return Run(nonce, invocation, out, err, proc.returncode)


def terminate_at_first_progress(proc, timeout):
    """SIGTERM a started probe as soon as it writes its first progress record; returns that
    record's line ("" if none came) and what the probe wrote after it (stdout, stderr)."""
    line = ""
    for line in proc.stdout:
        if '"kind":"progress"' in line:
            proc.send_signal(signal.SIGTERM)
            break
    rest, err = proc.communicate(timeout=timeout)
    return line, rest, err


def run_in_bwrap(probe_id, params, extra=()):
    if shutil.which("bwrap") is None:
        raise AssertionError("bubblewrap (bwrap) is required for the sandbox tests")
    at = BWRAP.index("--remount-ro")  # extra mounts go after (over) the default ones
    run = run_probe(probe_id, params, prefix=BWRAP[:at] + list(extra) + BWRAP[at:],
                    python="python3")
    if not run.records:
        raise AssertionError("bwrap could not run the probe (rc %s): %s" % (run.returncode,
                                                                           run.stderr))
    return run


def assert_localhost_is_local():
    """"localhost" must come from /etc/hosts before any DNS server is asked (traffic rule)."""
    with open("/etc/hosts") as f:
        assert any(l.split()[:1] == ["127.0.0.1"] and "localhost" in l.split() for l in f), \
            "/etc/hosts does not map localhost to 127.0.0.1"
    with open("/etc/nsswitch.conf") as f:  # glibc's default without this file asks DNS first
        hosts = [l.split(":", 1)[1].split() for l in f if l.startswith("hosts:")][0]
    assert "files" in hosts and hosts.index("files") < (hosts + ["dns"]).index("dns"), hosts


def free_port(kind=socket.SOCK_STREAM, host="127.0.0.1"):
    """A port of host (127.0.0.1, or "::1") nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, kind) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- canaries

class Canary:
    """A socketserver on 127.0.0.1:0 served from a daemon thread; `hits` logs what it saw."""

    def __init__(self, server, hits):
        self.server, self.hits = server, hits
        self.port = server.server_address[1]
        self.target = "127.0.0.1:%d" % self.port
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _cluster_canary():
    """harness/drivers/kubernetes/cluster_canary.py as a module: its metadata_answer() and
    cloud_credential() are the cloud metadata shapes every canary follows (the harness's HTTP
    canary implements the same rules in C++)."""
    import importlib.util
    path = os.path.join(os.path.dirname(PROBES), "harness", "drivers", "kubernetes",
                        "cluster_canary.py")
    spec = importlib.util.spec_from_file_location("sandprobe_cluster_canary", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLUSTER_CANARY = _cluster_canary()
cloud_credential = CLUSTER_CANARY.cloud_credential


def docker_answer(method, path, nonce):
    """The Docker Engine API flavour of the harness's HTTP canary (harness/canary/http_canary.cc,
    AnswerAsDockerApi; docs/probes.md, net.docker-api): the Api-Version header on every answer,
    "OK" from /_ping, the version object from /version, with or without a /v1.NN prefix; never a
    real daemon. -> (status, extra headers, content type, body, hit kind), as metadata_answer()."""
    extra = [("Api-Version", "1.41"), ("Ostype", "linux"),
             ("Server", "sandprobe-canary (Docker Engine API)")]
    path = path.split("?", 1)[0]
    if path.startswith("/v1."):
        slash = path.find("/", 1)
        path = "/" if slash < 0 else path[slash:]
    read = method in ("GET", "HEAD")
    if read and path == "/_ping":
        return 200, extra, "text/plain; charset=utf-8", b"OK", "docker"
    if read and path == "/version":
        version = {"ApiVersion": "1.41", "MinAPIVersion": "1.12", "Version": "sandprobe-canary",
                   "Os": "linux", "Arch": "amd64", "SandprobeNonce": nonce}
        return 200, extra, "application/json", json.dumps(version).encode(), "docker"
    return 404, extra, "application/json", b'{"message":"page not found"}', "docker"


def http_canary(canary=True, tls=False, bind="127.0.0.1", docker=False):
    """The HTTP canary (200 + "sandprobe-canary <nonce>"; the cloud metadata paths answered as
    the clouds answer them, with the planted credential cloud_credential(nonce) on the credential
    paths), docker=True its Docker Engine API flavour (docker_answer()), or, canary=False, a plain
    server that answers 404 without any nonce (a stand-in for a real metadata or API server). bind
    "::1" serves IPv6. `hits` logs the X-Sandprobe tag of every request, `requests` (method, path,
    hit kind) of each."""
    hits, requests = [], []
    token = secrets.token_urlsafe(32)

    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            tag = self.headers.get("X-Sandprobe", "")
            hits.append(tag)
            if docker:
                status, extra, ctype, body, kind = docker_answer(self.command, self.path,
                                                                 tag.split(" ")[0])
            elif canary:
                status, extra, ctype, body, kind = CLUSTER_CANARY.metadata_answer(
                    self.command, self.path, list(self.headers.items()), tag.split(" ")[0], token)
            else:
                status, extra, ctype, body, kind = 404, [], "text/plain", b"not here\n", "http"
            requests.append((self.command, self.path, kind))
            self.send_response(status)
            for name, value in extra:
                self.send_header(name, value)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = answer

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in bind else socket.AF_INET

    server = Server((bind, 0), Handler)
    server.daemon_threads = True
    if tls:
        with tempfile.NamedTemporaryFile("w", suffix=".pem") as pem:
            pem.write(TEST_KEY_AND_CERT)
            pem.flush()
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(pem.name)
        server.socket = ctx.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
    c = Canary(server, hits)
    c.requests = requests
    if ":" in bind:
        c.target = "[%s]:%d" % (bind, c.port)
    return c


def echo_of(line):
    """The echo canaries' answer to `SANDPROBE <nonce> <inv>`, or None for anything else."""
    if line.startswith("SANDPROBE "):
        return ("SANDPROBE-ECHO %s\n" % line[len("SANDPROBE "):]).encode()
    return None


def tcp_canary(echo=True):
    """TCP echo canary: `SANDPROBE <nonce> <inv>` -> `SANDPROBE-ECHO <nonce> <inv>`; echo=False
    reads the line and hangs up without a word (a local proxy's behaviour)."""
    hits = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            line = self.rfile.readline(4096).decode(errors="replace").strip()
            hits.append(line)
            reply = echo_of(line) if echo else None
            if reply:
                self.wfile.write(reply)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return Canary(server, hits)


def datagram_canary(answer):
    """A UDP canary: answer(datagram) -> (what to log in hits, the datagrams to send back)."""
    hits = []

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            data, sock = self.request
            hit, replies = answer(data)
            hits.append(hit)
            for reply in replies:
                sock.sendto(reply, self.client_address)

    return Canary(socketserver.UDPServer(("127.0.0.1", 0), Handler), hits)


def dns_canary():
    """DNS over UDP: logs the query name, first sends a datagram with the wrong id (the probe
    must skip it), then NXDOMAIN with the query's id and its question section."""
    def answer(data):
        qid, = struct.unpack("!H", data[:2])
        labels, pos = [], 12
        while data[pos]:
            labels.append(data[pos + 1:pos + 1 + data[pos]].decode())
            pos += 1 + data[pos]
        question = data[12:pos + 5]
        return ".".join(labels), [struct.pack("!6H", i, 0x8183, 1, 0, 0, 0) + question
                                  for i in (qid ^ 1, qid)]
    return datagram_canary(answer)


def udp_canary(mode="echo"):
    """UDP echo canary: a datagram `SANDPROBE <nonce> <inv>` -> `SANDPROBE-ECHO <nonce> <inv>`.
    mode "foreign" answers a datagram without any nonce (a stand-in for another service),
    "silent" answers nothing."""
    def answer(data):
        line = data.decode(errors="replace").strip()
        reply = {"echo": echo_of(line), "foreign": b"hello from something else\n"}.get(mode)
        return line, [reply] if reply else []
    return datagram_canary(answer)


# ----------------------------------------------------------------------------- shared checks

class ProbeTestCase(unittest.TestCase):
    """unittest.TestCase with the checks that several probes' tests share."""

    def canary(self, canary):
        """The canary, closed when the test ends."""
        self.addCleanup(canary.close)
        return canary

    def assertBlockedByRefusal(self, result):
        self.assertEqual((result["outcome"], result["evidence"], result["errno"]),
                         ("blocked", "positive", "ECONNREFUSED"))

    def assertRefusedOnLoopbackIsBlocked(self, probe_id, key, kind=socket.SOCK_STREAM, **params):
        """params[key] = a 127.0.0.1 port nothing listens on: a refusal is positive evidence."""
        params.update({key: "127.0.0.1:%d" % free_port(kind), "timeout_s": 2})
        self.assertBlockedByRefusal(run_probe(probe_id, params).result)

    def assertNoTargetSendsNothing(self, probe_id, key="target"):
        """A suite that blanks the target (the harness's default is its loopback canary) must not
        reach for 169.254.169.254 or the system resolver: the probe says no_target and connects
        nowhere."""
        r = run_probe(probe_id, {key: ""}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("no_target", "absence"))

    def assertBlockedOnlyInBwrap(self, probe_id, canary):
        """The probe reaches the canary unsandboxed (the control), then is refused in bubblewrap's
        own network namespace, whose loopback has no listener; the canary sees the control only."""
        try:
            self.assertEqual(run_probe(probe_id, {"target": canary.target}).result["outcome"],
                             "reached")
            r = run_in_bwrap(probe_id, {"target": canary.target, "timeout_s": 2}).result
        finally:
            canary.close()
        self.assertBlockedByRefusal(r)
        self.assertEqual(len(canary.hits), 1)

    def assertLowSpaceGuardStops(self, probe_id, directory):
        """A filesystem far larger than the target with less free than the reserve: stop before
        writing anything."""
        r = run_probe(probe_id, {"dir": directory, "target_mib": 1,
                                 "reserve_mib": 1 << 40}).result
        self.assertEqual((r["outcome"], r["written_mib"], r["cleaned_up"]),
                         ("low_space_guard", 0.0, True))

    def assertOutcomeShowsRoot(self, probe_id, as_root, otherwise):
        """The probe runs here as root (CI and this machine) or not: its row must show which."""
        r = run_probe(probe_id, {}).result
        self.assertEqual(r["outcome"], as_root if os.geteuid() == 0 else otherwise)

    def assertMissingDirAndLowSpaceGuard(self, probe_id, missing_outcome):
        """A missing "dir": missing_outcome on absence evidence (ENOENT); then the low-space guard
        in a temp dir, which the probe leaves empty."""
        with tempfile.TemporaryDirectory() as tmp:
            r = run_probe(probe_id, {"dir": os.path.join(tmp, "missing"), "target_mib": 8}).result
            self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                             (missing_outcome, "absence", "ENOENT"))
            self.assertLowSpaceGuardStops(probe_id, tmp)
            self.assertEqual(os.listdir(tmp), [])

    def assertSigtermCleansUp(self, probe_id, params):
        """The probe writing into a temp "dir" gets SIGTERM at its first progress record: it exits
        143 without a result and leaves the dir empty. Returns that progress record's line."""
        with tempfile.TemporaryDirectory() as tmp:
            proc, _, _ = start_probe(probe_id, dict(params, dir=tmp))
            line, rest, _ = terminate_at_first_progress(proc, timeout=10)
            self.assertEqual(os.listdir(tmp), [])
        self.assertEqual(proc.returncode, 143)
        self.assertNotIn('"kind":"result"', rest)
        return line


class UntargetedAndRefusedTests:
    """A mixin for a network probe whose only safe default target is the harness's canary
    (net.metadata, net.dns, net.udp): its ProbeTestCase gets the two tests every such probe
    needs. Set PROBE (the probe id), and TARGET_KEY and KIND where the target parameter or its
    socket type differ."""
    PROBE = None
    TARGET_KEY = "target"
    KIND = socket.SOCK_STREAM

    def test_a_blank_target_sends_nothing(self):
        self.assertNoTargetSendsNothing(self.PROBE, self.TARGET_KEY)

    def test_refused_on_loopback_is_blocked(self):
        self.assertRefusedOnLoopbackIsBlocked(self.PROBE, self.TARGET_KEY, self.KIND)


class PolicyFieldTests:
    """A mixin for the net.policy-* probes' ProbeTestCase (preamble policy_field): inside and
    outside pairs against loopback echo canaries and closed ports. Set PROBE, FIELD (the field's
    name in every reason) and PROTO (tcp or udp)."""
    PROBE, FIELD, PROTO = None, None, "tcp"

    def pair(self, name, port):
        return "%s=127.0.0.1:%d/%s" % (name, port, self.PROTO)

    def echo(self):
        return self.canary(udp_canary() if self.PROTO == "udp" else tcp_canary()).port

    def closed(self):
        return free_port(socket.SOCK_DGRAM if self.PROTO == "udp" else socket.SOCK_STREAM)

    def field(self, inside, outside):
        return run_probe(self.PROBE, {"inside": inside, "outside": outside, "timeout_s": 1}).result

    def test_inside_answered_outside_held_is_honored(self):
        r = self.field([self.pair("in", self.echo())], [self.pair("out", self.closed())])
        self.assertEqual((r["outcome"], r["evidence"]), ("honored", "absence"), r)
        self.assertTrue(r["detail"].startswith(self.FIELD + " honored: inside answered"), r)
        self.assertEqual([(p["side"], p["answered"]) for p in r["pairs"]],
                         [("inside", True), ("outside", False)])

    def test_an_outside_answer_is_ignored_and_named(self):
        port = self.echo()
        r = self.field([self.pair("in", self.echo())], [self.pair("just-out", port)])
        self.assertEqual((r["outcome"], r["evidence"]), ("ignored", "positive"), r)
        self.assertEqual(r["detail"], "%s not honored: outside answered: just-out 127.0.0.1:%d/%s"
                         % (self.FIELD, port, self.PROTO))

    def test_inside_refused_with_outside_held_is_over_blocking(self):
        r = self.field([self.pair("in", self.closed())], [self.pair("out", self.closed())])
        self.assertEqual((r["outcome"], r["errno"]), ("over_blocking", "ECONNREFUSED"), r)
        self.assertIn("over-blocks: inside not answered: in 127.0.0.1:", r["detail"])

    def test_a_missing_side_or_a_malformed_pair_is_an_error(self):
        ok = self.pair("in", 7)
        for inside, outside in (([ok], []), (["in=127.0.0.1/tcp"], ["x"]),
                                ([ok], ["out=127.0.0.1:7/icmp"]),
                                ([ok], ["out=localhost:7/tcp"]),   # a name: nothing is looked up
                                ([ok], ["out=127.0.0.1:\u00b2/tcp"]),  # not ASCII digits
                                ([ok], ["out=127.0.0.1:%s/tcp" % ("9" * 5000)]),
                                ([ok], [ok] * 33),                 # more than 32 a side
                                ([ok], ["%s=127.0.0.1:7/tcp" % ("n" * 64)])):
            r = self.field(inside, outside)
            self.assertEqual((r["outcome"], r["errno"]), ("error", "EINVAL"), (inside, outside))
        r = run_probe(self.PROBE, {"inside": [ok], "outside": [ok], "timeout_s": 0}).result
        self.assertEqual((r["outcome"], r["errno"]), ("error", "EINVAL"), r)

    def test_a_pair_still_running_at_the_bound_is_unchecked_never_held(self):
        if self.PROTO == "udp":
            self.skipTest("a datagram pair has no connection to keep open")
        with socket.create_server(("127.0.0.1", 0)) as trickle, \
                socket.create_server(("127.0.0.1", 0)) as mute:
            def drip():  # a byte every 0.4 s for 5 s: each read returns, the bound comes first
                conn = trickle.accept()[0]
                with conn:
                    for _ in range(12):
                        time.sleep(0.4)
                        conn.sendall(b"x")
            threading.Thread(target=drip, daemon=True).start()
            r = run_probe(self.PROBE, {"inside": [self.pair("in", self.echo())],
                                       "outside": [self.pair("trickle", trickle.getsockname()[1])],
                                       "timeout_s": 1}).result
            self.assertEqual((r["outcome"], r["evidence"]), ("unchecked", "absence"), r)
            self.assertFalse(r["pairs"][1]["done"])
            # Connected, then silent until the read timed out: held (absence), as a policy's
            # silence is.
            r = run_probe(self.PROBE, {"inside": [self.pair("in", self.echo())],
                                       "outside": [self.pair("mute", mute.getsockname()[1])],
                                       "timeout_s": 1}).result
        self.assertEqual(r["outcome"], "honored", r)
        self.assertEqual(r["pairs"][1]["errno"], "TimeoutError")


class MetadataShapeTests(UntargetedAndRefusedTests):
    """A mixin for the net.metadata-* probes' ProbeTestCase: the requests their cloud's metadata
    service wants, against the HTTP canary (which answers as the clouds do) and a plain server;
    every request tagged; blocked in bubblewrap. Set PROBE, STEPS (the step names and the canary's
    status for each) and BIND ("::1" for an IPv6 probe)."""
    STEPS = None
    BIND = "127.0.0.1"

    def target_of(self, port):
        return "[%s]:%d" % (self.BIND, port) if ":" in self.BIND else "%s:%d" % (self.BIND, port)

    def run_against(self, canary):
        return run_probe(self.PROBE, {"target": canary.target, "timeout_s": 2})

    def check_shape(self, result):
        """More checks of the result against the canary (a probe's own facts)."""

    def check_plain(self, result):
        """More checks of the result against the plain server."""

    def test_the_cloud_shape_reaches_the_canary(self):
        c = self.canary(http_canary(bind=self.BIND))
        run = self.run_against(c)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_nonce_seen"]),
                         ("reached", "positive", True), r)
        self.assertEqual([(s["step"], s["status"]) for s in r["steps"]], self.STEPS)
        self.assertEqual(c.hits, ["%s %s" % (run.nonce, run.invocation)] * len(self.STEPS))
        self.assertEqual(run.records[0]["kind"], "start")
        self.check_shape(r)

    def test_any_status_from_a_real_server_is_reached(self):
        c = self.canary(http_canary(canary=False, bind=self.BIND))
        r = self.run_against(c).result
        self.assertEqual((r["outcome"], r["canary_nonce_seen"]), ("reached", False))
        self.assertEqual({s["status"] for s in r["steps"]}, {404})
        self.check_plain(r)

    def test_refused_on_loopback_is_blocked(self):
        port = free_port(host=self.BIND)
        r = run_probe(self.PROBE, {"target": self.target_of(port), "timeout_s": 2}).result
        self.assertBlockedByRefusal(r)
        self.assertTrue(all(s["evidence"] == "positive" for s in r["steps"]), r)

    def test_blocked_in_bubblewrap_only(self):
        """The control reaches the canary, bubblewrap's own network namespace does not (its
        loopback has no listener): the canary hears the control only."""
        c = self.canary(http_canary(bind=self.BIND))
        self.assertEqual(self.run_against(c).result["outcome"], "reached")
        heard = len(c.hits)
        r = run_in_bwrap(self.PROBE, {"target": c.target, "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("blocked", "positive"), r)
        self.assertEqual(len(c.hits), heard)


class ConcurrentPairTests:
    """A mixin for the ProbeTestCase of a probe the runner deploys as a concurrent pair
    (proc.sibling, net.sibling; docs/probes.md "The concurrent pair"): calls 1 and 2 at the same
    moment, then closing call 3 with both results, each assembled and run as deployed; and the two
    tests every such probe needs. Set PROBE; PAIR holds the parameters every call gets."""
    PROBE = None
    PAIR = {"overlap_s": 1.5}

    def start_call(self, call, other, ids, wrap=(), **params):
        """Call `call` of the pair (its partner `other`) started under `wrap`: a Popen."""
        script = assemble(probe_dir(self.PROBE), dict(self.PAIR, call=call, concurrent_with=other,
                                                      previous=[], **params), *ids)
        return subprocess.Popen(list(wrap) + [PYTHON, "-u", "-c", script],
                                stdout=subprocess.PIPE, text=True)

    def finish_call(self, proc, ids):
        """The result record of a started call."""
        out, _ = proc.communicate(timeout=30)
        r = Run(*ids, out, "", proc.returncode).result
        self.assertIsNotNone(r)
        return r

    def start_pair(self, ids, wrap=(), **params):
        """Calls 1 and 2 started at the same moment -> their Popens."""
        return [self.start_call(1, 2, ids, wrap, **params),
                self.start_call(2, 1, ids, wrap, **params)]

    def run_pair(self, wrap=(), **params):
        """The pair and the closing call -> (the pair's two results, the closing call's result)."""
        ids = new_ids()
        pair = [self.finish_call(p, ids) for p in self.start_pair(ids, wrap, **params)]
        return pair, self.close_pair(pair, ids)

    def close_pair(self, pair, ids):
        """The closing call with `pair` as its previous results -> its result."""
        script = assemble(probe_dir(self.PROBE), dict(self.PAIR, call=3, previous=pair), *ids)
        out = subprocess.run([PYTHON, "-u", "-c", script], capture_output=True, text=True,
                             timeout=30)
        return Run(*ids, out.stdout, out.stderr, out.returncode).result

    def check_apart(self, first, second):
        """More checks of the results of two calls that never overlapped."""

    def test_calls_that_never_overlap_are_not_judged(self):
        ids = new_ids()
        first = self.finish_call(self.start_call(1, 2, ids), ids)
        time.sleep(0.3)
        second = self.finish_call(self.start_call(2, 1, ids), ids)
        self.check_apart(first, second)
        last = self.close_pair([first, second], ids)
        self.assertEqual(last["outcome"], "not_concurrent", last)

    def test_a_missing_half_of_the_pair_is_not_judged(self):
        self.assertEqual(self.close_pair([None, None], new_ids())["outcome"], "no_pair")
