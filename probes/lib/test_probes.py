"""Tests for the probe scripts, the shared preamble and assemble.py (stdlib unittest).

    python3 -m unittest discover -s probes/lib -p 'test_*.py'

Every probe is assembled with assemble.py exactly as deployed and run as `python3 -u -c SCRIPT`
against tiny canaries started here. Traffic rule: every listener binds 127.0.0.1 and every target
is 127.0.0.1 (or "localhost" from /etc/hosts); no test may send a packet anywhere else, so the
system-resolver mode of net.dns is never run; net.metadata and net.dns have no default target.
The bubblewrap tests fail (never skip) when bwrap is missing or cannot create namespaces.
"""
import ast
import base64
import hashlib
import json
import os
import resource
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


# ----------------------------------------------------------------------------- running probes

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
                directory=None):
    nonce, invocation = secrets.token_hex(8), "i" + secrets.token_hex(3)
    script = assemble(directory or probe_dir(probe_id), params, nonce, invocation)
    proc = subprocess.Popen(list(prefix) + [python, "-u", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=preexec_fn)
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


def free_port(kind=socket.SOCK_STREAM):
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- canaries

class Canary:
    """A socketserver on 127.0.0.1:0 served from a daemon thread; `hits` logs what it saw."""

    def __init__(self, server):
        self.server = server
        self.port = server.server_address[1]
        self.target = "127.0.0.1:%d" % self.port
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def http_canary(canary=True, tls=False):
    """The HTTP canary (200 + "sandprobe-canary <nonce>") or, canary=False, a plain server that
    answers 404 without any nonce (a stand-in for a real metadata or API server)."""
    hits = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            tag = self.headers.get("X-Sandprobe", "")
            hits.append(tag)
            if canary:
                status, body = 200, ("sandprobe-canary %s\n" % tag.split(" ")[0]).encode()
            else:
                status, body = 404, b"not here\n"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls:
        with tempfile.NamedTemporaryFile("w", suffix=".pem") as pem:
            pem.write(TEST_KEY_AND_CERT)
            pem.flush()
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(pem.name)
        server.socket = ctx.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
    c = Canary(server)
    c.hits = hits
    return c


def tcp_canary(echo=True):
    """TCP echo canary: `SANDPROBE <nonce> <inv>` -> `SANDPROBE-ECHO <nonce> <inv>`; echo=False
    reads the line and hangs up without a word (a local proxy's behaviour)."""
    hits = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            line = self.rfile.readline(4096).decode(errors="replace").strip()
            hits.append(line)
            if echo and line.startswith("SANDPROBE "):
                self.wfile.write(("SANDPROBE-ECHO %s\n" % line[len("SANDPROBE "):]).encode())

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    c = Canary(server)
    c.hits = hits
    return c


def dns_canary():
    """DNS over UDP: logs the query name, first sends a datagram with the wrong id (the probe
    must skip it), then NXDOMAIN with the query's id and its question section."""
    hits = []

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            data, sock = self.request
            qid, = struct.unpack("!H", data[:2])
            labels, pos = [], 12
            while data[pos]:
                labels.append(data[pos + 1:pos + 1 + data[pos]].decode())
                pos += 1 + data[pos]
            hits.append(".".join(labels))
            question = data[12:pos + 5]
            sock.sendto(struct.pack("!6H", qid ^ 1, 0x8183, 1, 0, 0, 0) + question,
                        self.client_address)
            sock.sendto(struct.pack("!6H", qid, 0x8183, 1, 0, 0, 0) + question,
                        self.client_address)

    c = Canary(socketserver.UDPServer(("127.0.0.1", 0), Handler))
    c.hits = hits
    return c


def udp_canary(mode="echo"):
    """UDP echo canary: a datagram `SANDPROBE <nonce> <inv>` -> `SANDPROBE-ECHO <nonce> <inv>`.
    mode "foreign" answers a datagram without any nonce (a stand-in for another service),
    "silent" answers nothing."""
    hits = []

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            data, sock = self.request
            line = data.decode(errors="replace").strip()
            hits.append(line)
            if mode == "echo" and line.startswith("SANDPROBE "):
                reply = "SANDPROBE-ECHO %s\n" % line[len("SANDPROBE "):]
            elif mode == "foreign":
                reply = "hello from something else\n"
            else:
                return
            sock.sendto(reply.encode(), self.client_address)

    c = Canary(socketserver.UDPServer(("127.0.0.1", 0), Handler))
    c.hits = hits
    return c


def session_members(sid):
    """Live (non-zombie) processes of session sid, from /proc/<pid>/stat."""
    live = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            live.append(int(name))
    return live


def _uid_of(pid):
    try:
        with open("/proc/%s/status" % pid) as f:
            return int([l for l in f if l.startswith("Uid:")][0].split()[1])
    except (OSError, IndexError):
        return None


def wait_until(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return predicate()


# ----------------------------------------------------------------------------- probe.yaml

def _strip_comment(line):
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _scalar(text):
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "~", ""):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _flow(text):
    """A YAML flow value ({...}, [...], "quoted" or plain) -> (value, rest)."""
    text = text.lstrip()
    if text.startswith('"'):
        value, end = json.JSONDecoder().raw_decode(text)
        return value, text[end:]
    if text[:1] in "{[":
        close, out = ("}", {}) if text[0] == "{" else ("]", [])
        text = text[1:].lstrip()
        while not text.startswith(close):
            if close == "}":
                key, text = text.split(":", 1)
                out[key.strip()], text = _flow(text)
            else:
                item, text = _flow(text)
                out.append(item)
            text = text.lstrip()
            if text.startswith(","):
                text = text[1:].lstrip()
        return out, text[1:]
    end = min([i for i in (text.find(","), text.find("}"), text.find("]")) if i >= 0] + [len(text)])
    return _scalar(text[:end]), text[end:]


def load_descriptor(path):
    """The YAML subset probe.yaml is written in: block mappings by indentation, `>-` folded
    scalars, flow mappings/sequences, plain and double-quoted scalars, comments. Anything
    else fails loudly, which keeps descriptors simple for the C++ side (yaml-cpp) as well."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    root, i = {}, 0
    stack = [(-1, root)]
    while i < len(lines):
        line = _strip_comment(lines[i]).rstrip()
        i += 1
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        key, sep, rest = line.strip().partition(":")
        assert sep and key and " " not in key, "unsupported YAML line: %r" % line
        while stack[-1][0] >= indent:
            stack.pop()
        parent, rest = stack[-1][1], rest.strip()
        if rest == ">-":
            block = []
            while i < len(lines) and (not lines[i].strip()
                                      or len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i].strip())
                i += 1
            parent[key] = " ".join(b for b in block if b)
        elif rest == "":
            parent[key] = {}
            stack.append((indent, parent[key]))
        else:
            value, tail = _flow(rest)
            assert not tail.strip(), "trailing text in %r" % line
            parent[key] = value
    return root


# ----------------------------------------------------------------------------- probe.py (ast)

def parse_probe(probe_id):
    with open(os.path.join(probe_dir(probe_id), "probe.py"), encoding="utf-8") as f:
        source = f.read()
    return source, ast.parse(source)


def params_read(tree):
    """{name: default} of every PARAMS.get("name", default) call."""
    found = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "PARAMS"):
            assert node.func.attr == "get" and len(node.args) == 2, ast.dump(node)
            found[ast.literal_eval(node.args[0])] = ast.literal_eval(node.args[1])
    return found


def outcomes_emitted(tree, source):
    """Literal outcomes: result("x", ...), returned ("x", evidence, errno, detail, ...) tuples,
    net_failure()'s ("blocked", "refused", "error") and the preamble's crash record ("error")."""
    found = {"error"}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "result" and isinstance(node.args[0], ast.Constant)):
            found.add(node.args[0].value)
        if (isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
                and len(node.value.elts) >= 4 and isinstance(node.value.elts[0], ast.Constant)):
            found.add(node.value.elts[0].value)
    if "net_failure(" in source or "http_get(" in source:
        found |= {"blocked", "refused", "error"}
    if "http_get(" in source:  # the preamble's http_get() returns these too
        found |= {"reached", "no_reply"}
    return found


def function_source(probe_id, name):
    source, tree = parse_probe(probe_id)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(source, node)
    raise AssertionError("%s has no %s()" % (probe_id, name))


# ============================================================================= tests

class DescriptorTest(unittest.TestCase):
    EXPECTED_IDS = ["cred.env-secrets", "cred.sa-token", "fs.dev-shm", "fs.docker-socket",
                    "fs.fill-tmp", "fs.write-root",
                    "kernel.boundary", "net.dns", "net.http-by-name", "net.interfaces",
                    "net.k8s-api", "net.metadata", "net.tcp-by-ip", "net.udp",
                    "platform.runtime-class", "priv.capabilities", "priv.no-new-privs",
                    "priv.uid", "proc.host-pids", "proc.outlives-call", "res.cpu-loop",
                    "res.fork-bomb", "res.memory-balloon", "res.output-flood",
                    "state.persists"]
    KEYS = ["id", "label", "category", "description", "requires_control", "drivers", "params",
            "classify"]
    EXPOSURES = {"exposed", "contained", "unknown"}
    # multi-call probes; late evidence (http driver); what the harness plants; how it deploys
    OPTIONAL = ["calls", "after_call_s", "needs", "deploy"]

    def test_catalogue_is_complete(self):
        self.assertEqual(all_probe_ids(), self.EXPECTED_IDS)

    def test_descriptors_follow_the_schema(self):
        for pid in all_probe_ids():
            with self.subTest(probe=pid):
                d = load_descriptor(os.path.join(probe_dir(pid), "probe.yaml"))
                self.assertEqual([k for k in d if k not in self.OPTIONAL], self.KEYS)
                self.assertEqual(d["id"], pid)
                self.assertEqual(d["category"], pid.split(".")[0])
                self.assertTrue(0 < len(d["label"]) <= 32 and d["description"])
                kube = pid == "platform.runtime-class"
                self.assertIs(d["requires_control"], not kube)
                self.assertEqual(d["drivers"], ["kubernetes"] if kube else ["all"])
                for name, spec in d["params"].items():
                    self.assertLessEqual(set(spec), {"default", "description", "from_limit",
                                                     "factor", "unit"}, name)
                    self.assertIn("default", spec)
                    self.assertTrue(spec["description"])
                c = d["classify"]
                self.assertEqual(list(c)[:2], ["outcomes", "killed"])
                self.assertLessEqual(set(c), {"outcomes", "killed", "timed_out", "deadline",
                                              "exceeds", "fact", "output", "quiet_after_call",
                                              "crashed"})
                if "fact" in c:  # a driver fact decides when the probe defers (outcome unknown)
                    self.assertLessEqual(set(c["fact"]), {"name", "above_zero", "zero"})
                    self.assertLessEqual({c["fact"].get("above_zero", "exposed"),
                                          c["fact"].get("zero", "contained")}, self.EXPOSURES)
                endings = {c[k] for k in ("killed", "timed_out", "deadline") if k in c}
                self.assertLessEqual(set(c["outcomes"].values()) | endings, self.EXPOSURES)
                if "exceeds" in c:  # the claim check names a parameter sized from a limit
                    self.assertIn(c["exceeds"]["param"], d["params"])
                    self.assertIn("from_limit", d["params"][c["exceeds"]["param"]])

    def test_sized_params_follow_the_claimed_limits(self):
        balloon = load_descriptor(os.path.join(probe_dir("res.memory-balloon"), "probe.yaml"))
        fill = load_descriptor(os.path.join(probe_dir("fs.fill-tmp"), "probe.yaml"))
        for d, limit in ((balloon, "memory"), (fill, "tmp")):
            spec = d["params"]["target_mib"]
            self.assertEqual((spec["from_limit"], spec["factor"], spec["unit"]), (limit, 2, "MiB"))
            self.assertEqual(d["classify"]["killed"], "contained")
        fork = load_descriptor(os.path.join(probe_dir("res.fork-bomb"), "probe.yaml"))
        target, claimed = fork["params"]["target"], fork["params"]["claimed_pids"]
        self.assertEqual((target["from_limit"], target["factor"], claimed["from_limit"],
                          claimed["factor"]), ("pids", 2, "pids", 1))
        self.assertEqual(fork["classify"]["exceeds"], {"field": "forked", "param": "claimed_pids"})
        loop = load_descriptor(os.path.join(probe_dir("res.cpu-loop"), "probe.yaml"))
        self.assertEqual((loop["classify"]["killed"], loop["classify"]["deadline"]),
                         ("contained", "exposed"))

    def test_params_in_script_match_descriptor(self):
        for pid in all_probe_ids():
            with self.subTest(probe=pid):
                d = load_descriptor(os.path.join(probe_dir(pid), "probe.yaml"))
                read = params_read(parse_probe(pid)[1])
                self.assertEqual(read, {k: v["default"] for k, v in d["params"].items()})

    def test_every_outcome_is_classified_and_every_classified_outcome_exists(self):
        for pid in all_probe_ids():
            with self.subTest(probe=pid):
                d = load_descriptor(os.path.join(probe_dir(pid), "probe.yaml"))
                source, tree = parse_probe(pid)
                emitted = outcomes_emitted(tree, source)
                if pid == "platform.runtime-class":  # the kubernetes driver answers for it
                    emitted |= {"rejected", "admitted"}
                self.assertEqual(emitted, set(d["classify"]["outcomes"]))

    def test_shared_helpers_live_in_the_preamble_only(self):
        # http_get() and resolve() are shared by the network probes through the preamble, which
        # every deployed script carries; a copy in a probe body would drift from it.
        with open(os.path.join(LIB, "preamble.py")) as f:
            preamble = f.read()
        for name in ("http_get", "resolve"):
            self.assertIn("def %s(" % name, preamble)
            for pid in all_probe_ids():
                self.assertNotIn("def %s(" % name, parse_probe(pid)[0], pid)


class AssembleTest(unittest.TestCase):
    def test_deployed_script_layout(self):
        script = assemble(probe_dir("net.dns"), {"server": "127.0.0.1:53", "z": "\u00e9"},
                          "0123456789abcdef", "i3f9a2c")
        lines = script.splitlines()
        self.assertEqual(lines[0], "# sandprobe probe net.dns")
        self.assertTrue(lines[1].startswith('_SANDPROBE = "') and lines[1].endswith('"'))
        # Byte for byte what nlohmann::json's dump() gives in the harness: sorted keys, no
        # spaces, UTF-8 rather than \u escapes.
        blob = base64.b64decode(lines[1][len('_SANDPROBE = "'):-1]).decode("utf-8")
        self.assertEqual(blob, '{"invocation":"i3f9a2c","nonce":"0123456789abcdef",'
                               '"params":{"server":"127.0.0.1:53","z":"\u00e9"},"probe":"net.dns"}')
        with open(os.path.join(LIB, "preamble.py")) as f:
            preamble = f.read()
        with open(os.path.join(probe_dir("net.dns"), "probe.py")) as f:
            body = f.read()
        self.assertEqual("\n".join(lines[2:]) + "\n", preamble + body)

    def test_preamble_is_small_and_every_script_is_under_the_cap(self):
        with open(os.path.join(LIB, "preamble.py")) as f:
            self.assertLess(len(f.read().splitlines()), 160)  # it rides along in every script
        for pid in all_probe_ids():
            script = assemble(probe_dir(pid), {}, "0123456789abcdef", "i1")
            self.assertLess(len(script.encode()), 64 * 1024, pid)

    def test_rejects_oversized_scripts_and_bad_arguments(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "probe.yaml"), "w") as f:
                f.write("id: test.big\n")
            with open(os.path.join(tmp, "probe.py"), "w") as f:
                f.write("# padding\n" * 7000)  # 70 000 bytes
            for args in ([tmp], [probe_dir("net.dns"), "--nonce", "XYZ"],
                         [probe_dir("net.dns"), "--params", "[1]"]):
                out = subprocess.run([sys.executable, ASSEMBLE] + args, capture_output=True,
                                     text=True)
                self.assertEqual(out.returncode, 2, args)
                self.assertEqual(out.stdout, "")


class PreambleTest(unittest.TestCase):
    """The helpers, run inside a deployed script (the preamble owns fd 1 and sys.excepthook)."""

    BODY = r'''
import ssl
checks = {
    "loopback": {h: is_loopback(h) for h in ["127.0.0.1", "127.8.9.10", "::1", "[::1]",
        "::ffff:127.0.0.1", "localhost", "LOCALHOST.", "api.localhost", "10.0.0.1",
        "169.254.169.254", "0.0.0.0", "example.com", "::ffff:10.0.0.1"]},
    "split": [split_hostport(t, 443) for t in ["1.2.3.4:80", "[::1]:53", "::1", "host",
        "[fd00::1]", "kubernetes.default.svc:6443"]],
    "errno": [errno_name(e) for e in [ConnectionRefusedError(111, "x"),
        socket.gaierror(socket.EAI_NONAME, "x"), socket.gaierror(socket.EAI_AGAIN, "x"),
        TimeoutError("timed out"), ValueError("x"), ssl.SSLError(1, "x"), OSError(99999, "x")]],
    "net": [net_failure(e, h)[:3] for e, h in [(ConnectionRefusedError(111, "x"), "127.0.0.1"),
        (ConnectionRefusedError(111, "x"), "10.0.0.1"), (OSError(101, "x"), "10.0.0.1"),
        (OSError(113, "x"), "10.0.0.1"), (TimeoutError("timed out"), "10.0.0.1"),
        (ConnectionResetError(104, "x"), "10.0.0.1")]],
    "sha": sha256_prefix(b"abc"),
    "params": PARAMS, "ids": [PROBE, NONCE, INVOCATION, MARK],
}
emit("progress", seq=999, probe="forged", checks=checks)
result("reached", "positive")
result("blocked", "positive")  # a second result is dropped: exactly one per run
raise ValueError("after the result: no second record")
'''

    def run_body(self, body, params):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "probe.yaml"), "w") as f:
                f.write("id: test.helpers\n")
            with open(os.path.join(tmp, "probe.py"), "w") as f:
                f.write(body)
            return run_probe("test.helpers", params, directory=tmp)

    def test_helpers(self):
        run = self.run_body(self.BODY, {"x": [1, "two"]})
        progress = run.records[0]
        self.assertEqual((progress["kind"], progress["probe"], progress["seq"]),
                         ("progress", "test.helpers", 1))
        c = progress["checks"]
        self.assertEqual(c["loopback"], {
            "127.0.0.1": True, "127.8.9.10": True, "::1": True, "[::1]": True,
            "::ffff:127.0.0.1": True, "localhost": True, "LOCALHOST.": True,
            "api.localhost": True, "10.0.0.1": False, "169.254.169.254": False,
            "0.0.0.0": False, "example.com": False, "::ffff:10.0.0.1": False})
        self.assertEqual(c["split"], [["1.2.3.4", 80], ["::1", 53], ["::1", 443], ["host", 443],
                                      ["fd00::1", 443], ["kubernetes.default.svc", 6443]])
        self.assertEqual(c["errno"], ["ECONNREFUSED", "EAI_NONAME", "EAI_AGAIN", "TimeoutError",
                                      "ValueError", "SSLError", "E99999"])
        self.assertEqual(c["net"], [["blocked", "positive", "ECONNREFUSED"],
                                    ["refused", "positive", "ECONNREFUSED"],
                                    ["blocked", "positive", "ENETUNREACH"],
                                    ["blocked", "positive", "EHOSTUNREACH"],
                                    ["blocked", "absence", "TimeoutError"],
                                    ["error", "absence", "ECONNRESET"]])
        self.assertEqual(c["sha"], "ba7816bf8f01")
        self.assertEqual(c["params"], {"x": [1, "two"]})
        self.assertEqual(c["ids"], ["test.helpers", run.nonce, run.invocation, "@@sandprobe"])
        self.assertEqual([r["kind"] for r in run.records], ["progress", "result"])
        self.assertEqual(run.result["outcome"], "reached")
        self.assertEqual(run.result["seq"], 2)
        self.assertIn("ValueError", run.stderr)  # the traceback still reaches stderr

    def test_records_are_one_compact_ascii_line_each(self):
        run = self.run_body('emit("progress", text="line\\nbreak \\u00e9 \\"q\\"")\n', {})
        self.assertEqual(run.other_lines, [])
        line = run.stdout.splitlines()[0]
        self.assertEqual(line, '%s %s {"kind":"progress","probe":"test.helpers","seq":1,'
                               '"text":"line\\nbreak \\u00e9 \\"q\\""}' % (MARK, run.nonce))

    def test_a_crash_still_ends_in_a_result(self):
        run = run_probe("res.memory-balloon", {"target_mib": "lots", "step_mib": 16})
        self.assertEqual((run.result["outcome"], run.result["evidence"], run.result["errno"]),
                         ("error", "absence", "ValueError"))
        self.assertEqual(run.returncode, 1)

    def test_a_vanished_reader_ends_the_probe_quietly(self):
        proc, _, _ = start_probe("res.cpu-loop", {"heartbeat_s": 0.05, "max_s": 30})
        proc.stdout.close()  # before the first record is written
        try:
            rc = proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        self.assertEqual(rc, 141)
        self.assertEqual(proc.stderr.read(), "")
        proc.stderr.close()


class CredentialProbeTest(unittest.TestCase):
    SECRET = "sandprobe-test-secret-" + secrets.token_hex(16)

    def assert_secret_not_printed(self, run):
        self.assertNotIn(self.SECRET, run.stdout + run.stderr)

    def test_env_secret_present_but_never_printed(self):
        env = dict(os.environ, SANDPROBE_CANARY_TOKEN=self.SECRET)
        params = {"canary_name": "SANDPROBE_CANARY_TOKEN",
                  "canary_sha256": hashlib.sha256(self.SECRET.encode()).hexdigest()}
        run = run_probe("cred.env-secrets", params, env=env)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_matches"]),
                         ("present", "positive", True))
        self.assertIn("SANDPROBE_CANARY_TOKEN", r["secret_like_names"])
        self.assertGreaterEqual(r["env_count"], len(env))  # (a pyenv shim adds its own)
        self.assert_secret_not_printed(run)

    def test_env_secret_absent_or_different(self):
        params = {"canary_name": "SANDPROBE_CANARY_TOKEN", "canary_sha256": "00" * 32}
        env = {k: v for k, v in os.environ.items() if k != "SANDPROBE_CANARY_TOKEN"}
        r = run_probe("cred.env-secrets", params, env=env).result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_name_present"]),
                         ("absent", "positive", False))
        run = run_probe("cred.env-secrets", params, env=dict(env, SANDPROBE_CANARY_TOKEN="x"))
        self.assertEqual((run.result["outcome"], run.result["canary_name_present"],
                          run.result["canary_matches"]), ("absent", True, False))

    def test_token_file_readable_reports_length_and_prefix_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            canary = os.path.join(tmp, "token")
            with open(canary, "w") as f:
                f.write(self.SECRET)
            run = run_probe("cred.sa-token", {"paths": [os.path.join(tmp, "missing")],
                                              "canary_path": canary})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_readable"]),
                         ("readable", "positive", True))
        self.assertEqual(r["canary"]["length"], len(self.SECRET))
        self.assertEqual(r["canary"]["sha256_prefix"],
                         hashlib.sha256(self.SECRET.encode()).hexdigest()[:12])
        self.assertEqual(r["files"][0]["errno"], "ENOENT")
        self.assert_secret_not_printed(run)

    def test_token_file_missing_is_positive_evidence(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_probe("cred.sa-token", {"paths": [os.path.join(tmp, "missing"),
                                                      os.path.join(tmp, "f", "token")],
                                            "canary_path": ""}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["canary_readable"]),
                         ("unreadable", "positive", "ENOENT", False))


class NetworkProbeTest(unittest.TestCase):
    def setUp(self):
        self.canaries = []

    def tearDown(self):
        for c in self.canaries:
            c.close()

    def canary(self, c):
        self.canaries.append(c)
        return c

    def test_targets_with_no_safe_default_send_nothing_without_one(self):
        # A suite that forgets the target must not reach for 169.254.169.254 or the system
        # resolver: the probe says no_target and connects nowhere.
        for pid in ("net.metadata", "net.dns", "net.udp"):
            with self.subTest(probe=pid):
                r = run_probe(pid, {}).result
                self.assertEqual((r["outcome"], r["evidence"]), ("no_target", "absence"))

    def test_metadata_reaches_canary_and_proves_it_server_side(self):
        c = self.canary(http_canary())
        run = run_probe("net.metadata", {"target": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["status"], r["canary_nonce_seen"]),
                         ("reached", "positive", 200, True))
        self.assertEqual(c.hits, ["%s %s" % (run.nonce, run.invocation)])
        self.assertEqual(run.records[0]["kind"], "start")

    def test_metadata_any_status_from_a_real_server_is_reached(self):
        c = self.canary(http_canary(canary=False))
        r = run_probe("net.metadata", {"target": c.target, "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["status"], r["canary_nonce_seen"]),
                         ("reached", 404, False))

    def test_refused_on_loopback_is_blocked(self):
        assert_localhost_is_local()
        port = free_port()
        for pid, params in (("net.metadata", {"target": "127.0.0.1:%d" % port}),
                            ("net.tcp-by-ip", {"target": "127.0.0.1:%d" % port}),
                            ("net.k8s-api", {"target": "127.0.0.1:%d" % port, "scheme": "http"}),
                            ("net.http-by-name", {"url": "http://localhost:%d/" % port}),
                            ("net.dns", {"server": "127.0.0.1:%d" % free_port(socket.SOCK_DGRAM)}),
                            ("net.udp", {"target": "127.0.0.1:%d" % free_port(socket.SOCK_DGRAM)})):
            with self.subTest(probe=pid):
                r = run_probe(pid, dict(params, timeout_s=2)).result
                self.assertEqual((r["outcome"], r["evidence"]), ("blocked", "positive"))
                if pid == "net.http-by-name":  # "localhost" may be ::1 first, maybe unusable
                    r = r["attempts"][-1]
                    self.assertEqual(r["addr"], "127.0.0.1")
                self.assertEqual(r["errno"], "ECONNREFUSED")

    def test_tcp_echo_reached(self):
        c = self.canary(tcp_canary())
        run = run_probe("net.tcp-by-ip", {"target": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_echo"], r["connected"]),
                         ("reached", "positive", True, True))
        self.assertEqual(c.hits, ["SANDPROBE %s %s" % (run.nonce, run.invocation)])

    def test_tcp_connect_without_echo_is_not_reached(self):
        c = self.canary(tcp_canary(echo=False))
        r = run_probe("net.tcp-by-ip", {"target": c.target, "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"], r["connected"], r["reply_bytes"]),
                         ("no_echo", "absence", True, 0))

    def test_udp_echo_reached(self):
        c = self.canary(udp_canary())
        run = run_probe("net.udp", {"target": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["canary_echo"], r["replies"]),
                         ("reached", "positive", True, 1))
        self.assertEqual(c.hits, ["SANDPROBE %s %s" % (run.nonce, run.invocation)])
        self.assertEqual(run.records[0]["kind"], "start")

    def test_udp_reply_without_the_nonce_is_unknown(self):
        c = self.canary(udp_canary("foreign"))
        run = run_probe("net.udp", {"target": c.target, "timeout_s": 1})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["replies"], r["foreign_replies"]),
                         ("no_echo", "absence", 1, 1))
        self.assertEqual(len(c.hits), 1)

    def test_udp_silence_is_blocked_by_absence(self):
        c = self.canary(udp_canary("silent"))
        started = time.monotonic()
        r = run_probe("net.udp", {"target": c.target, "timeout_s": 1}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["replies"]),
                         ("blocked", "absence", "TimeoutError", 0))
        self.assertGreaterEqual(time.monotonic() - started, 1)
        self.assertEqual(len(c.hits), 1)

    def test_udp_needs_an_ip_target(self):
        # No name lookup: a name is an error, and nothing is sent (the resolver is never asked).
        r = run_probe("net.udp", {"target": "sandprobe-missing.invalid:7", "timeout_s": 1}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("error", "absence", "EAI_NONAME"))

    def test_dns_nxdomain_from_the_canary_is_reached(self):
        c = self.canary(dns_canary())
        run = run_probe("net.dns", {"server": c.target, "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["rcode"], r["qname_echoed"]),
                         ("reached", "positive", "NXDOMAIN", True))
        self.assertEqual(c.hits, ["%s.%s.sandprobe.test" % (run.invocation, run.nonce)])

    def test_http_by_name_reaches_canary(self):
        assert_localhost_is_local()
        c = self.canary(http_canary())
        run = run_probe("net.http-by-name", {"url": "http://localhost:%d/x?y=1" % c.port,
                                             "timeout_s": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["status"], r["canary_nonce_seen"]),
                         ("reached", 200, True))
        self.assertIn("127.0.0.1", r["addresses"])
        self.assertEqual(r["attempts"][-1]["addr"], "127.0.0.1")
        self.assertEqual(c.hits, ["%s %s" % (run.nonce, run.invocation)])

    def test_k8s_api_from_service_env_over_tls(self):
        c = self.canary(http_canary(canary=False, tls=True))
        env = dict(os.environ, KUBERNETES_SERVICE_HOST="127.0.0.1",
                   KUBERNETES_SERVICE_PORT=str(c.port))
        r = run_probe("net.k8s-api", {"target": "", "scheme": "https", "timeout_s": 2},
                      env=env).result
        self.assertEqual((r["outcome"], r["status"], r["target_source"], r["target"]),
                         ("reached", 404, "env", "127.0.0.1:%d" % c.port))

    def test_k8s_api_without_target(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        r = run_probe("net.k8s-api", {"target": "", "scheme": "http", "timeout_s": 2},
                      env=env).result
        self.assertEqual((r["outcome"], r["evidence"]), ("no_target", "absence"))

    def test_k8s_api_tls_to_a_plain_http_server_is_no_reply(self):
        c = self.canary(http_canary())
        r = run_probe("net.k8s-api", {"target": c.target, "scheme": "https",
                                      "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["connected"]),
                         ("no_reply", "absence", "SSLError", True))

    def test_interfaces_match_the_namespace(self):
        r = run_probe("net.interfaces", {}).result
        self.assertEqual(r["names"], [n for _, n in socket.if_nameindex()])
        self.assertEqual(r["count"], len(r["names"]))
        self.assertIn(r["outcome"], ("loopback_only", "other_interfaces"))


class ResourceProbeTest(unittest.TestCase):
    def test_balloon_reaches_a_small_target_step_by_step(self):
        run = run_probe("res.memory-balloon", {"target_mib": 64, "step_mib": 16})
        self.assertEqual([p["allocated_mib"] for p in run.kinds("progress")], [16, 32, 48, 64])
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["allocated_mib"]),
                         ("target_reached", "positive", 64))

    def test_balloon_under_an_address_space_limit_hits_memory_error(self):
        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (200_000_000, 200_000_000))
        run = run_probe("res.memory-balloon", {"target_mib": 512, "step_mib": 16},
                        preexec_fn=limit)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("memory_error", "positive", "MemoryError"))
        self.assertLess(r["allocated_mib"], 200)
        self.assertEqual(run.kinds("progress")[-1]["allocated_mib"], r["allocated_mib"])

    def test_fork_bomb_small_target_all_forked_and_all_reaped(self):
        run = run_probe("res.fork-bomb", {"target": 40, "hold_s": 0.2},
                        preexec_fn=os.setsid)
        self.assertEqual([p["forked"] for p in run.kinds("progress")], [1, 2, 4, 8, 16, 32])
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["forked"], r["left_behind"],
                          r["killed_children"]), ("all_forked", "positive", 40, 0, 0))
        self.assertEqual((run.other_lines, run.stderr), ([], ""))  # children write nothing
        self.assertEqual(run.records[0]["kind"], "start")

    def test_fork_bomb_capped_by_rlimit_nproc_as_an_unused_uid(self):
        # RLIMIT_NPROC is ignored for root (CI runs as root), so drop to a uid that no process
        # uses (nobody may be busy: the limit counts the uid's processes machine-wide).
        if os.geteuid() != 0:
            raise AssertionError("this test switches to an unused uid and needs root")
        used = {_uid_of(n) for n in os.listdir("/proc") if n.isdigit()}
        uid = next(u for u in range(61000 + secrets.randbelow(1000), 70000) if u not in used)
        prefix = ["setpriv", "--reuid", str(uid), "--regid", str(uid), "--clear-groups",
                  "prlimit", "--nproc=11"]
        run = run_probe("res.fork-bomb", {"target": 64, "hold_s": 0.2}, prefix=prefix,
                        python=DEBIAN_PYTHON, preexec_fn=os.setsid)
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["left_behind"]),
                         ("capped", "positive", "EAGAIN", 0), run.stderr)
        self.assertTrue(0 < r["forked"] <= 10, r["forked"])  # python itself counts too

    def test_fork_bomb_sigterm_kills_and_reaps_every_child(self):
        proc, nonce, invocation = start_probe("res.fork-bomb", {"target": 256, "hold_s": 30},
                                              preexec_fn=os.setsid)
        try:
            for line in proc.stdout:
                if '"kind":"progress"' in line:
                    proc.send_signal(signal.SIGTERM)
                    break
            rest, err = proc.communicate(timeout=15)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.assertEqual(proc.returncode, 143, err)
        self.assertNotIn('"kind":"result"', rest)
        self.assertEqual(session_members(proc.pid), [])  # the parent reaped them all

    def test_fork_bomb_children_end_when_the_parent_is_killed(self):
        proc, nonce, invocation = start_probe("res.fork-bomb", {"target": 64, "hold_s": 30},
                                              preexec_fn=os.setsid)
        try:
            for line in proc.stdout:
                if '"forked":64' in line:
                    break
            self.assertGreaterEqual(len(session_members(proc.pid)), 64)
            proc.kill()  # SIGKILL: no finally runs; the children see EOF on the release pipe
            proc.wait()
            self.assertTrue(wait_until(lambda: session_members(proc.pid) == [], 5),
                            session_members(proc.pid))
        finally:
            for pid in session_members(proc.pid):
                os.kill(pid, signal.SIGKILL)
            proc.stdout.close()
            proc.stderr.close()

    def test_fork_bomb_over_the_safety_cap_forks_nothing(self):
        r = run_probe("res.fork-bomb", {"target": 5000}).result
        self.assertEqual((r["outcome"], r["evidence"], r["forked"]),
                         ("over_safety_cap", "absence", 0))

    def test_cpu_loop_runs_until_killed_and_leaves_progress(self):
        proc, nonce, invocation = start_probe("res.cpu-loop", {"heartbeat_s": 0.5, "max_s": 30})
        time.sleep(2)
        proc.kill()
        out, err = proc.communicate()
        run = Run(nonce, invocation, out, err, proc.returncode)
        self.assertEqual(run.returncode, -signal.SIGKILL)
        self.assertEqual(run.records[0]["kind"], "start")
        elapsed = [p["elapsed_s"] for p in run.kinds("progress")]
        self.assertGreaterEqual(len(elapsed), 2)
        self.assertEqual(elapsed, sorted(elapsed))
        self.assertEqual(run.kinds("result"), [])

    def test_cpu_loop_stops_when_orphaned(self):
        script = assemble(probe_dir("res.cpu-loop"), {"heartbeat_s": 0.2, "max_s": 30},
                          secrets.token_hex(8), "i1")
        # The shell is the probe's parent and exits after 0.5 s; the pipe reaches EOF only
        # when the orphaned probe has stopped too.
        proc = subprocess.Popen(["sh", "-c", '"$1" -u -c "$2" & sleep 0.5', "sh", PYTHON, script],
                                stdout=subprocess.PIPE, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=10)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the orphan, should the guard fail
            except ProcessLookupError:
                pass
        self.assertIn(b'"kind":"progress"', out)

    def test_cpu_loop_safety_net(self):
        run = run_probe("res.cpu-loop", {"heartbeat_s": 0.2, "max_s": 0.5}, timeout=10)
        self.assertEqual(run.returncode, 3)
        self.assertEqual(run.kinds("progress")[-1]["gave_up"], "max_s reached")
        self.assertEqual(run.kinds("result"), [])


class FilesystemProbeTest(unittest.TestCase):
    def test_fill_writes_the_target_and_deletes_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = run_probe("fs.fill-tmp", {"dir": tmp, "target_mib": 8, "chunk_mib": 1})
            self.assertEqual(os.listdir(tmp), [])
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["written_mib"], r["cleaned_up"]),
                         ("target_written", "positive", 8.0, True))

    def test_fill_reports_progress_and_cleans_up_on_sigterm(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, nonce, _ = start_probe("fs.fill-tmp", {"dir": tmp, "target_mib": 1024,
                                                        "chunk_mib": 1})
            for line in proc.stdout:
                if '"kind":"progress"' in line:
                    proc.send_signal(signal.SIGTERM)
                    break
            rest, _ = proc.communicate(timeout=10)
            self.assertEqual(os.listdir(tmp), [])
        self.assertIn('"written_mib":32', line)
        self.assertEqual(proc.returncode, 143)
        self.assertNotIn('"kind":"result"', rest)

    def test_fill_failure_and_guard(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_probe("fs.fill-tmp", {"dir": os.path.join(tmp, "missing"),
                                          "target_mib": 8}).result
            self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                             ("write_failed", "absence", "ENOENT"))
            # A filesystem far larger than the target with less free than the reserve: stop.
            r = run_probe("fs.fill-tmp", {"dir": tmp, "target_mib": 1,
                                          "reserve_mib": 1 << 40}).result
            self.assertEqual((r["outcome"], r["written_mib"], r["cleaned_up"]),
                             ("low_space_guard", 0.0, True))
            self.assertEqual(os.listdir(tmp), [])

    def test_dev_shm_small_target_written_and_deleted(self):
        if not os.path.isdir("/dev/shm"):
            raise AssertionError("this host has no /dev/shm")
        run = run_probe("fs.dev-shm", {"target_mib": 16, "step_mib": 4})
        self.assertEqual([p["written_mib"] for p in run.kinds("progress")], [4, 8, 12, 16])
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["written_mib"], r["cleaned_up"]),
                         ("target_written", "positive", 16.0, True))
        self.assertGreater(r["size_mib"], 0)
        self.assertEqual([n for n in os.listdir("/dev/shm") if run.nonce in n], [])

    def test_dev_shm_missing_guarded_and_sigterm(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_probe("fs.dev-shm", {"dir": os.path.join(tmp, "none"),
                                         "target_mib": 8}).result
            self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                             ("not_writable", "absence", "ENOENT"))
            r = run_probe("fs.dev-shm", {"dir": tmp, "target_mib": 1,
                                         "reserve_mib": 1 << 40}).result
            self.assertEqual((r["outcome"], r["written_mib"], r["cleaned_up"]),
                             ("low_space_guard", 0.0, True))
            proc, nonce, _ = start_probe("fs.dev-shm", {"dir": tmp, "target_mib": 1024,
                                                       "step_mib": 1})
            for line in proc.stdout:
                if '"kind":"progress"' in line:
                    proc.send_signal(signal.SIGTERM)
                    break
            rest, _ = proc.communicate(timeout=10)
            self.assertEqual(os.listdir(tmp), [])
        self.assertEqual(proc.returncode, 143)
        self.assertNotIn('"kind":"result"', rest)

    def test_write_root_creates_and_removes(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_probe("fs.write-root", {"paths": [tmp, os.path.join(tmp, "no")]}).result
            self.assertEqual(os.listdir(tmp), [])
        self.assertEqual((r["outcome"], r["created"]), ("created", [tmp]))
        self.assertEqual(r["attempts"][0]["removed"], True)
        self.assertEqual(r["attempts"][1]["errno"], "ENOENT")


class PrivilegeProbeTest(unittest.TestCase):
    """Run here as root (CI and this machine): each row must show what it looks for."""

    def test_uid_capabilities_and_no_new_privs_of_this_process(self):
        uid = run_probe("priv.uid", {}).result
        self.assertEqual(uid["outcome"], "root" if os.geteuid() == 0 else "unprivileged")
        caps = run_probe("priv.capabilities", {}).result
        self.assertEqual(caps["outcome"], "capable" if os.geteuid() == 0 else "no_capabilities")
        nnp = run_probe("priv.no-new-privs", {}).result
        self.assertIn(nnp["outcome"], ("set", "not_set"))
        self.assertIn(nnp["prctl"], (0, 1))

    def test_no_new_privs_set_by_a_parent_is_seen(self):
        # setpriv --no-new-privs (util-linux) sets the bit before exec; the probe must read 1.
        script = assemble(probe_dir("priv.no-new-privs"), {}, "0123456789abcdef", "i1")
        out = subprocess.run(["setpriv", "--no-new-privs", sys.executable, "-u", "-c", script],
                             capture_output=True, text=True, timeout=30)
        self.assertIn('"outcome":"set"', out.stdout, out.stderr)

    def test_kernel_boundary_compares_with_the_host_release(self):
        same = run_probe("kernel.boundary", {"host_release": os.uname().release}).result
        self.assertEqual((same["outcome"], same["evidence"]), ("host_kernel", "positive"))
        other = run_probe("kernel.boundary", {"host_release": "0.0.0-not-this-kernel"}).result
        self.assertEqual(other["outcome"], "other_kernel")
        none = run_probe("kernel.boundary", {}).result
        self.assertEqual(none["outcome"], "error")


class ProcessProbeTest(unittest.TestCase):
    def test_host_pids_sees_a_sibling_but_never_its_command_line(self):
        secret = "sandprobe-argv-secret-" + secrets.token_hex(8)
        sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", secret])
        try:
            run = run_probe("proc.host-pids", {})
        finally:
            sibling.kill()
            sibling.wait()
        r = run.result
        self.assertEqual((r["outcome"], r["evidence"], r["own_pid_visible"]),
                         ("foreign_visible", "positive", True))
        self.assertGreaterEqual(r["foreign"], 1)  # the sibling at least
        self.assertEqual(r["visible"], r["own_tree"] + r["foreign"])
        self.assertGreaterEqual(r["own_tree"], 2)  # the probe and this test runner, its ancestor
        self.assertTrue(0 < len(r["foreign_comm"]) <= 5, r["foreign_comm"])
        self.assertNotIn(secret, run.stdout + run.stderr)

    def test_host_pids_without_proc_is_unknown(self):
        r = run_probe("proc.host-pids", {"proc": "/nonexistent-proc"}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("no_proc", "absence", "ENOENT"))


class DaemonSocketProbeTest(unittest.TestCase):
    def test_answering_present_and_absent_sockets(self):
        with tempfile.TemporaryDirectory() as d:
            docker = os.path.join(d, "docker.sock")
            other = os.path.join(d, "containerd.sock")
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(docker)
            srv.listen(1)
            mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            mute.bind(other)

            def answer():
                conn, _ = srv.accept()
                conn.recv(512)
                conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nOK")
                conn.close()
            t = threading.Thread(target=answer, daemon=True)
            t.start()
            r = run_probe("fs.docker-socket", {"paths": [docker, other], "timeout_s": 2}).result
            self.assertEqual(r["outcome"], "daemon_answers")
            r = run_probe("fs.docker-socket", {"paths": [other]}).result
            self.assertEqual(r["outcome"], "socket_present")
            r = run_probe("fs.docker-socket", {"paths": [os.path.join(d, "none.sock")]}).result
            self.assertEqual((r["outcome"], r["evidence"]), ("no_socket", "positive"))
            srv.close()
            mute.close()


class SandboxedTest(unittest.TestCase):
    """The same probes inside bubblewrap (own network namespace, read-only root)."""

    def test_tcp_by_ip_is_blocked_although_the_canary_listens(self):
        c = tcp_canary()
        try:
            self.assertEqual(run_probe("net.tcp-by-ip", {"target": c.target}).result["outcome"],
                             "reached")  # control: the same target, unsandboxed
            r = run_in_bwrap("net.tcp-by-ip", {"target": c.target, "timeout_s": 2}).result
        finally:
            c.close()
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("blocked", "positive", "ECONNREFUSED"))
        self.assertEqual(len(c.hits), 1)  # the control's visit only

    def test_dns_is_blocked(self):
        c = dns_canary()
        try:
            r = run_in_bwrap("net.dns", {"server": c.target, "timeout_s": 2}).result
        finally:
            c.close()
        self.assertEqual((r["outcome"], r["evidence"]), ("blocked", "positive"))
        self.assertEqual(c.hits, [])

    def test_interfaces_loopback_only_even_when_sys_shows_the_host(self):
        r = run_in_bwrap("net.interfaces", {}).result
        self.assertEqual((r["outcome"], r["evidence"], r["names"]),
                         ("loopback_only", "positive", ["lo"]))
        # Trap 9: with the host's /sys bind-mounted, /sys/class/net lists the host's devices.
        r = run_in_bwrap("net.interfaces", {}, extra=["--ro-bind", "/sys", "/sys"]).result
        self.assertEqual((r["outcome"], r["names"]), ("loopback_only", ["lo"]))
        self.assertEqual(r["sys_class_net"], sorted(os.listdir("/sys/class/net")))

    def test_http_by_name_unresolvable_name_is_blocked(self):
        # In bwrap's own network namespace, so the lookup cannot leave the machine.
        r = run_in_bwrap("net.http-by-name", {"url": "http://sandprobe-missing.invalid/",
                                              "timeout_s": 2}).result
        self.assertEqual((r["outcome"], r["evidence"], r["detail"]),
                         ("blocked", "absence", "name did not resolve"))
        self.assertTrue(r["errno"].startswith("EAI_"), r["errno"])

    def test_write_root_refused_read_only(self):
        r = run_in_bwrap("fs.write-root", {"paths": ["/", "/etc", "/usr/bin"]}).result
        self.assertEqual((r["outcome"], r["evidence"]), ("refused", "positive"))
        self.assertEqual([a["errno"] for a in r["attempts"]], ["EROFS", "ENOENT", "EROFS"])

    def test_fill_tmp_hits_a_small_tmpfs(self):
        r = run_in_bwrap("fs.fill-tmp", {"dir": "/tmp", "target_mib": 8, "chunk_mib": 1},
                         extra=["--size", str(4 * MIB), "--tmpfs", "/tmp"]).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["cleaned_up"]),
                         ("write_failed", "positive", "ENOSPC", True))
        self.assertLessEqual(r["written_mib"], 4)

    def test_dev_shm_hits_a_small_shm_tmpfs(self):
        r = run_in_bwrap("fs.dev-shm", {"target_mib": 8, "step_mib": 1},
                         extra=["--size", str(4 * MIB), "--tmpfs", "/dev/shm"])
        progress = [p["written_mib"] for p in r.kinds("progress")]
        r = r.result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"], r["cleaned_up"], r["size_mib"]),
                         ("shm_full", "positive", "ENOSPC", True, 4))
        self.assertLessEqual(r["written_mib"], 4)
        self.assertEqual(progress, list(range(1, len(progress) + 1)))  # one record per MiB
        self.assertEqual(progress[-1], r["written_mib"])
        self.assertIn("ENOSPC after", r["detail"])

    def test_dev_shm_read_only_is_erofs(self):
        r = run_in_bwrap("fs.dev-shm", {"target_mib": 8},
                         extra=["--tmpfs", "/dev/shm", "--remount-ro", "/dev/shm"]).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("not_writable", "positive", "EROFS"))

    def test_fork_bomb_inside_the_sandbox(self):
        r = run_in_bwrap("res.fork-bomb", {"target": 32, "hold_s": 0.1}).result
        self.assertEqual((r["outcome"], r["forked"], r["left_behind"]), ("all_forked", 32, 0))

    def test_host_pids_own_namespace_and_a_sibling_inside_it(self):
        # --unshare-pid (in --unshare-all) and a fresh --proc: bwrap's init and the probe only.
        r = run_in_bwrap("proc.host-pids", {}).result
        self.assertEqual((r["outcome"], r["evidence"], r["foreign"], r["foreign_comm"]),
                         ("own_only", "positive", 0, []))
        self.assertEqual(r["visible"], r["own_tree"])
        # A sibling in the same namespace (sh's background sleep) is foreign; sh is an ancestor.
        nonce, invocation = secrets.token_hex(8), "i" + secrets.token_hex(3)
        script = assemble(probe_dir("proc.host-pids"), {}, nonce, invocation)
        shell = 'sleep 30 & python3 -u -c "$1"; st=$?; kill $!; exit $st'
        out = subprocess.run(BWRAP + ["sh", "-c", shell, "sh", script], capture_output=True,
                             text=True, timeout=30)
        r = Run(nonce, invocation, out.stdout, out.stderr, out.returncode).result
        self.assertEqual((r["outcome"], r["foreign"], r["foreign_comm"], r["visible"]),
                         ("foreign_visible", 1, ["sleep"], 4))

    def test_udp_blocked_in_own_network_namespace(self):
        c = udp_canary()
        try:
            self.assertEqual(run_probe("net.udp", {"target": c.target}).result["outcome"],
                             "reached")  # control: the same target, unsandboxed
            r = run_in_bwrap("net.udp", {"target": c.target, "timeout_s": 2}).result
        finally:
            c.close()
        # bwrap's own loopback has no listener: ICMP port unreachable -> ECONNREFUSED on loopback.
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("blocked", "positive", "ECONNREFUSED"))
        self.assertEqual(len(c.hits), 1)  # the control's datagram only

    def test_every_probe_runs_on_debian_python(self):
        """Each probe once under /usr/bin/python3 in the sandbox: one result, never a crash."""
        params = {"net.metadata": {"target": "127.0.0.1:80", "timeout_s": 1},
                  "net.k8s-api": {"target": "127.0.0.1:443", "timeout_s": 1},
                  "net.tcp-by-ip": {"target": "127.0.0.1:80", "timeout_s": 1},
                  "net.dns": {"server": "127.0.0.1:53", "timeout_s": 1},
                  "net.http-by-name": {"url": "http://127.0.0.1:80/", "timeout_s": 1},
                  "res.memory-balloon": {"target_mib": 32},
                  "fs.fill-tmp": {"target_mib": 8},
                  "fs.dev-shm": {"target_mib": 8},
                  "res.fork-bomb": {"target": 16, "hold_s": 0.1},
                  "net.udp": {"target": "127.0.0.1:7", "timeout_s": 1},
                  "cred.env-secrets": {"canary_name": "X", "canary_sha256": "00"},
                  "kernel.boundary": {"host_release": os.uname().release},
                  "res.output-flood": {"total_mib": 0}}
        for pid in all_probe_ids():
            if pid == "res.cpu-loop":
                continue
            with self.subTest(probe=pid):
                run = run_in_bwrap(pid, params.get(pid, {}))
                self.assertNotEqual(run.result["outcome"], "error", run.stderr)
                self.assertEqual(run.records[0]["kind"], "start")
                self.assertEqual([r["seq"] for r in run.records],
                                 list(range(1, len(run.records) + 1)))
                self.assertEqual((run.other_lines, run.stderr), ([], ""))


class StatePersistsProbeTest(unittest.TestCase):
    """state.persists as the runner deploys it: two calls with the same nonce and invocation, the
    second given the first's result as `previous` (plain processes sharing /tmp and a cwd)."""

    def call(self, params, nonce, invocation, cwd):
        script = assemble(probe_dir("state.persists"), params, nonce, invocation)
        out = subprocess.run([PYTHON, "-u", "-c", script], capture_output=True, text=True,
                             cwd=cwd, timeout=30)
        return Run(nonce, invocation, out.stdout, out.stderr, out.returncode)

    def test_plain_processes_keep_files_and_the_process_but_not_the_env(self):
        nonce, inv = secrets.token_hex(8), "i" + secrets.token_hex(3)
        with tempfile.TemporaryDirectory() as cwd:
            one = self.call({"call": 1, "previous": None, "hold_s": 5}, nonce, inv, cwd).result
            self.assertEqual(one["outcome"], "planted")
            self.assertEqual(sorted(one["made"]), ["cwd", "env", "process", "tmp"])
            pid = one["planted"]["process"]["pid"]
            self.assertTrue(os.path.exists("/proc/%d" % pid), "the background process lives on")
            two = self.call({"call": 2, "previous": one, "hold_s": 5}, nonce, inv, cwd).result
            self.assertEqual((two["outcome"], two["evidence"]), ("persisted", "positive"))
            self.assertEqual(sorted(two["found"]), ["cwd file", "process", "tmp file"])
            # call 2 cleaned up: files removed, process killed (then reaped by init)
            self.assertFalse(os.path.exists(one["planted"]["tmp"]["path"]))
            self.assertFalse(os.path.exists(one["planted"]["cwd"]["path"]))
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    with open("/proc/%d/stat" % pid, "rb") as f:
                        if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                            break
                except OSError:
                    break
                time.sleep(0.05)
            else:
                self.fail("call 2 did not kill the background process %d" % pid)

    def test_nothing_found_is_fresh_and_nothing_planted_is_unknown(self):
        nonce, inv = secrets.token_hex(8), "i" + secrets.token_hex(3)
        previous = {"outcome": "planted", "token": "0" * 16, "made": ["tmp", "process"],
                    "planted": {"tmp": {"path": "/tmp/.sandprobe-state-absent-" + inv},
                                "process": {"pid": 2 ** 22 + 1, "start": 1}}}
        with tempfile.TemporaryDirectory() as cwd:
            fresh = self.call({"call": 2, "previous": previous}, nonce, inv, cwd).result
            self.assertEqual((fresh["outcome"], fresh["evidence"], fresh["found"]),
                             ("fresh", "absence", []))
            none = self.call({"call": 2, "previous": None}, nonce, inv, cwd).result
            self.assertEqual(none["outcome"], "not_planted")


class OutputFloodProbeTest(unittest.TestCase):
    def test_writes_whole_lines_then_a_result(self):
        run = run_probe("res.output-flood", {"total_mib": 2})
        r = run.result
        self.assertEqual((r["outcome"], r["written_bytes"]), ("written", 2 * MIB))
        self.assertEqual(len(run.other_lines), 2 * MIB // 1024)
        self.assertEqual(set(run.other_lines), {"f" * 1023})
        self.assertGreaterEqual(len(run.stdout.encode()), 2 * MIB)
        self.assertEqual(run.records[0]["kind"], "start")

    def test_progress_every_8_mib_and_zero_writes_nothing(self):
        run = run_probe("res.output-flood", {"total_mib": 17})
        self.assertEqual([p["written_mib"] for p in run.kinds("progress")], [8, 16])
        zero = run_probe("res.output-flood", {"total_mib": 0})
        self.assertEqual((zero.result["written_bytes"], zero.other_lines), (0, []))


if __name__ == "__main__":
    unittest.main()
