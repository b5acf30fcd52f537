"""Self-test of the run-code fixture's service designs (fixture.py --mode pool=N, soft-timeout,
exec, shared): each started on port 0, evaluations POSTed straight to it (no sandprobe), and the
design's behaviour asserted, weakness included: a warm pool hands call 1's /tmp to call N+1; a
soft timeout answers while the program runs on; exec runs evaluations as root in one shared
container; a shared session is joined by concurrent callers only. After SIGTERM nothing the
fixture started may be left: no process (found by a token every evaluation carries in its argv,
and by the fixture's private temp directory in the sandboxes' argv), no container with its
label, no scratch directory.

Needs root, bubblewrap, nsenter and setpriv (fails, never skips, without them); ExecMode also
needs the Docker daemon and sandprobe-probe:local (skipped only when the socket is absent).
Traffic: 127.0.0.1 only; every sandbox here has no network. Standard library only.
"""
import http.client
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "fixture.py")
DOCKER_SOCK = "/var/run/docker.sock"


class Fixture:
    """fixture.py as a child with its own TMPDIR (so its scratch directories land where the
    test can see them), READY read, stopped with SIGTERM."""

    def __init__(self, mode, *args):
        self.tmp = tempfile.mkdtemp(prefix="fixture-modes-")
        os.chmod(self.tmp, 0o711)  # the pool's sandboxes (uid 65534) bind scratch dirs under it
        self.token = "tok" + secrets.token_hex(8)
        env = dict(os.environ, TMPDIR=self.tmp)
        self.proc = subprocess.Popen([sys.executable, FIXTURE, "--mode", mode] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     stdin=subprocess.DEVNULL)
        ready, line = select.select([self.proc.stdout], [], [], 30)[0], b""
        if ready:
            line = self.proc.stdout.readline()
        if not line.startswith(b"READY http://127.0.0.1:"):
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("fixture did not start: %r %s" % (
                line, self.proc.stderr.read().decode(errors="replace")[-2000:]))
        self.port = int(line.split()[1].rsplit(b":", 1)[1])

    def post(self, code, timeout=60):
        """One evaluation; the token goes into the code (and so into every argv that holds it)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            body = json.dumps({"code": "# %s\n%s" % (self.token, code)})
            conn.request("POST", "/execute", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if resp.status != 200:
            raise AssertionError("HTTP %d: %r" % (resp.status, data[:500]))
        return json.loads(data)

    def get(self, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def stop(self):
        """SIGTERM; returns the exit code (SIGKILL after 10 s fails the test)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("the fixture ignored SIGTERM for 10 s")
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()
        return self.proc.returncode

    def leftovers(self):
        """Host pids whose argv carries this test's token or the fixture's temp directory."""
        marks = (self.token.encode(), self.tmp.encode())
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if any(m in cmdline for m in marks):
                found.append(int(name))
        return found

    def cleanup(self):
        """Safety net for a failed test: end what this fixture left, by pid, and its dir."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


def wait_for(predicate, timeout):
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > end:
            return value
        time.sleep(0.05)


def alive(pid, token):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return token.encode() in f.read()
    except OSError:
        return False


def in_thread(fn):
    """Runs fn() on a thread; the returned dict gets "result" or "error"."""
    box = {}

    def run():
        try:
            box["result"] = fn()
        except Exception as exc:  # the fixture closed the connection (SIGTERM) or failed
            box["error"] = exc

    box["thread"] = threading.Thread(target=run, daemon=True)
    box["thread"].start()
    return box


def last_json(reply):
    return json.loads(reply["stdout"].strip().splitlines()[-1])


class ModeCase(unittest.TestCase):
    MODE, ARGS = None, ()

    def setUp(self):
        self.fx = Fixture(self.MODE, *self.ARGS)
        self.addCleanup(self.fx.cleanup)

    def assert_stops_clean(self):
        """SIGTERM: exit 0, then no process, no scratch directory left."""
        self.assertEqual(self.fx.stop(), 0)
        self.assertEqual(wait_for(lambda: not self.fx.leftovers(), 5), True,
                         "left running: %s" % self.fx.leftovers())
        self.assertEqual(os.listdir(self.fx.tmp), [])

    def pid_file(self, name):
        """A path for evaluations that run on the host's filesystem (soft-timeout)."""
        return os.path.join(self.fx.tmp, name)


class PoolMode(ModeCase):
    MODE, ARGS = "pool=3", ("--timeout", "2", "--output-cap", "1000")

    def test_call_4_finds_call_1s_tmp_and_calls_2_and_3_do_not(self):
        self.assertEqual(self.fx.get("/healthz"), {"ok": True, "mode": "pool=3"})
        first = self.fx.post(
            "import os, json\n"
            "open('/tmp/mark', 'w').write('call 1')\n"
            "print(json.dumps({'cwd': os.getcwd(), 'home': os.environ.get('HOME'),\n"
            "                  'uid': os.getuid(), 'env': sorted(os.environ)}))")
        self.assertEqual(first["exit_code"], 0, first)
        facts = last_json(first)
        self.assertEqual((facts["cwd"], facts["home"], facts["uid"]), ("/tmp", "/tmp", 65534))
        self.assertNotIn("TMPDIR", facts["env"])  # the service's environment is not passed
        seen = []
        for _ in range(3):
            r = self.fx.post("import os\nprint(os.path.exists('/tmp/mark'))")
            self.assertEqual(r["exit_code"], 0, r)
            seen.append(r["stdout"].strip())
        self.assertEqual(seen, ["False", "False", "True"])  # calls 2, 3, 4

    def test_no_process_survives_its_call_and_the_timeout_and_cap_hold(self):
        r = self.fx.post(
            "import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)  # %s'],\n"
            "                 start_new_session=True)\n"
            "print('detached')" % self.fx.token)
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "detached\n"), r)
        self.assertEqual(wait_for(lambda: not self.fx.leftovers(), 3), True,
                         "survived its call: %s" % self.fx.leftovers())
        r = self.fx.post("import time\nprint('x', flush=True)\ntime.sleep(30)")
        self.assertEqual((r["exit_code"], r.get("error"), r["stdout"]), (124, "timed out", "x\n"))
        r = self.fx.post("print('y' * 5000)")
        self.assertEqual((r["exit_code"], r.get("truncated"), len(r["stdout"])), (0, True, 1000))

    def test_sigterm_mid_evaluation_leaves_nothing(self):
        box = in_thread(lambda: self.fx.post("import time\nprint('in', flush=True)\n"
                                             "time.sleep(30)"))
        self.assertTrue(wait_for(self.fx.leftovers, 5), "the evaluation never started")
        self.assert_stops_clean()
        box["thread"].join(10)


class SoftTimeoutMode(ModeCase):
    MODE, ARGS = "soft-timeout", ("--timeout", "2")

    def test_answers_at_the_timeout_while_the_program_runs_on_until_sigterm(self):
        self.assertEqual(self.fx.post("import sys\nprint('ok')\nsys.exit(3)"),
                         {"stdout": "ok\n", "stderr": "", "exit_code": 3})
        pid_file = self.pid_file("survivor.pid")
        began = time.monotonic()
        r = self.fx.post("import os, time\nprint('x', flush=True)\n"
                         "open(%r, 'w').write(str(os.getpid()))\ntime.sleep(30)" % pid_file)
        took = time.monotonic() - began
        self.assertEqual((r["exit_code"], r.get("error"), r["stdout"]), (124, "timed out", "x\n"))
        self.assertLess(took, 5)  # it did not wait for the survivor's pipes
        with open(pid_file) as f:
            pid = int(f.read())
        os.unlink(pid_file)
        time.sleep(0.5)
        self.assertTrue(alive(pid, self.fx.token), "python died with its shell")
        self.assert_stops_clean()
        self.assertFalse(alive(pid, self.fx.token))


@unittest.skipUnless(os.path.exists(DOCKER_SOCK), "no Docker daemon socket")
class ExecMode(ModeCase):
    MODE, ARGS = "exec", ("--timeout", "3")

    @staticmethod
    def engine(path):
        conn = http.client.HTTPConnection("localhost", timeout=30)
        conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.sock.settimeout(30)
        conn.sock.connect(DOCKER_SOCK)
        try:
            conn.request("GET", "/v1.41" + path)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"null")
        finally:
            conn.close()

    def containers(self):
        """This fixture's containers (label sandprobe.fixture=<its pid>-...)."""
        flt = json.dumps({"label": ["sandprobe.fixture"]})
        _, found = self.engine("/containers/json?all=1&filters=" + urllib.parse.quote(flt))
        prefix = "%d-" % self.fx.proc.pid
        return [c for c in found or [] if c["Labels"]["sandprobe.fixture"].startswith(prefix)]

    def test_evaluations_run_as_root_in_one_shared_container(self):
        self.assertEqual(self.fx.get("/healthz"), {"ok": True, "mode": "exec"})
        found = self.containers()
        self.assertEqual(len(found), 1, found)
        _, info = self.engine("/containers/%s/json" % found[0]["Id"])
        self.assertEqual(info["Config"]["User"], "65534:65534")
        self.assertTrue(info["State"]["Running"])
        self.assertEqual(info["HostConfig"]["NetworkMode"], "none")
        r = self.fx.post("import os\nopen('/tmp/mark', 'w').write('1')\nprint(os.getuid())")
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "0\n"), r)  # the weakness
        r = self.fx.post("import os\nprint(os.path.exists('/tmp/mark'))")
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "True\n"), r)
        r = self.fx.post("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(7)")
        self.assertEqual(r, {"stdout": "out\n", "stderr": "err\n", "exit_code": 7})
        box = in_thread(lambda: self.fx.post("import time\nprint('in', flush=True)\n"
                                             "time.sleep(30)"))
        self.assertTrue(wait_for(self.fx.leftovers, 5), "the evaluation never started")
        self.assert_stops_clean()
        self.assertEqual(self.containers(), [])
        box["thread"].join(10)


class SharedMode(ModeCase):
    MODE, ARGS = "shared", ("--timeout", "10")

    # Each of a pair writes its pid (as its PID namespace numbers it) to /tmp, waits up to 4 s
    # for another's file, and says whether that pid is in its /proc.
    PAIR = """import json, os, time
me = os.getpid()
open('/tmp/ev-%s' % me, 'w').write(str(me))
other, end = None, time.time() + 4
while other is None and time.time() < end:
    others = [n for n in os.listdir('/tmp') if n.startswith('ev-') and n != 'ev-%s' % me]
    other = int(others[0][3:]) if others else None
    time.sleep(0.05)
seen = other is not None and os.path.exists('/proc/%d' % other)
time.sleep(0.5)  # stay for the other's look
print(json.dumps({'me': me, 'other': other, 'seen': seen, 'uid': os.getuid()}))
"""

    def test_concurrent_callers_share_tmp_and_pids_sequential_ones_do_not(self):
        self.assertEqual(self.fx.get("/healthz"), {"ok": True, "mode": "shared"})
        boxes = [in_thread(lambda: self.fx.post(self.PAIR)) for _ in range(2)]
        for box in boxes:
            box["thread"].join(30)
        replies = [box.get("result") or box.get("error") for box in boxes]
        for r in replies:  # an evaluation that printed nothing: say what came back instead
            self.assertTrue(isinstance(r, dict) and r.get("stdout", "").strip(), replies)
        facts = [last_json(r) for r in replies]
        self.assertEqual([f["seen"] for f in facts], [True, True], replies)
        self.assertEqual({facts[0]["me"], facts[0]["other"]},
                         {facts[1]["me"], facts[1]["other"]})
        self.assertEqual([f["uid"] for f in facts], [65534, 65534])
        r = self.fx.post("open('/tmp/seq', 'w').write('1')\nprint('planted')")
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "planted\n"), r)
        r = self.fx.post("import os\nprint(sorted(os.listdir('/tmp')))\n"
                         "print(len([p for p in os.listdir('/proc') if p.isdigit()]))")
        # A fresh holder, whose own processes (root) are hidden: timeout and python only.
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "[]\n2\n"), r)
        private = os.listdir(self.fx.tmp)  # the fixture's private temp directory only
        self.assertEqual(len(private), 1, private)
        self.assertEqual(os.listdir(os.path.join(self.fx.tmp, private[0])), [])  # no scratch

    def test_a_joiner_outlives_the_caller_that_started_the_holder(self):
        # The first caller starts the holder and answers at once; the second, which joined it,
        # is still running when the first's request thread ends (bwrap --die-with-parent is
        # tied to the thread that forked it: the holder must not die with that thread).
        first = in_thread(lambda: self.fx.post(
            "import os, time\nopen('/tmp/first', 'w').write('1')\nend = time.time() + 10\n"
            "while not os.path.exists('/tmp/second') and time.time() < end:\n"
            "    time.sleep(0.05)\nprint(os.path.exists('/tmp/second'))"))
        self.assertTrue(wait_for(self.fx.leftovers, 5), "the first evaluation never started")
        second = self.fx.post(
            "import os, time\nend = time.time() + 10\n"
            "while not os.path.exists('/tmp/first') and time.time() < end:\n"
            "    time.sleep(0.05)\nopen('/tmp/second', 'w').write('1')\n"
            "time.sleep(3)\nprint(os.path.exists('/tmp/first'))")
        first["thread"].join(30)
        self.assertEqual(first.get("result"), {"stdout": "True\n", "stderr": "", "exit_code": 0},
                         first)
        self.assertEqual(second, {"stdout": "True\n", "stderr": "", "exit_code": 0})

    def test_capabilities_dropped_and_sigterm_mid_evaluation_leaves_nothing(self):
        r = self.fx.post("print([l.split()[1] for l in open('/proc/self/status')\n"
                         "       if l.startswith(('CapEff', 'CapBnd', 'NoNewPrivs'))])")
        self.assertEqual(r["stdout"], "['0000000000000000', '0000000000000000', '1']\n", r)
        box = in_thread(lambda: self.fx.post("import time\nprint('in', flush=True)\n"
                                             "time.sleep(30)"))
        self.assertTrue(wait_for(self.fx.leftovers, 5), "the evaluation never started")
        self.assert_stops_clean()
        box["thread"].join(10)


if __name__ == "__main__":
    unittest.main()
