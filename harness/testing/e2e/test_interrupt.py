"""E2E: Ctrl-C (SIGINT to the foreground process group) and SIGTERM during `sandprobe run`.

The run (default suite, bubblewrap vs local) is stopped once the first matrix row is on stdout.
Expected: exit 1 if a required FAIL was already measured, else 2; report.json written with
"interrupted": true and the rows measured before the signal; no probe or sandprobe-reaper process
of that run left; the run's canary folder removed.
"""
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import uuid

import e2e_util as u

FIRST_ROW_WAIT_S = 4.0


class Interrupt(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()

    def interrupt_run(self, sig, to_group, wait_for_label=None, wait_s=FIRST_ROW_WAIT_S):
        """Signals the run once the first row (or the row labelled wait_for_label) is printed."""
        with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-interrupt-") as base:
            out, canary_dir = os.path.join(base, "out"), os.path.join(base, "canary")
            os.makedirs(canary_dir)
            tag = uuid.uuid4().hex
            env = dict(os.environ, SANDPROBE_E2E_TAG=tag)
            env.setdefault("SANDPROBE_HOME", u.HOME)
            proc = subprocess.Popen([u.BIN, "run", "--out", out, "--canary-dir", canary_dir],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, env=env, start_new_session=True)
            lines, stderr = [], []
            first_row = threading.Event()

            def read_stdout():
                separator_seen = False
                for raw in proc.stdout:
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    lines.append(line)
                    if separator_seen and line.strip() and (
                            wait_for_label is None or line.startswith(wait_for_label + " ")):
                        first_row.set()
                    if line.startswith("-----"):
                        separator_seen = True

            readers = [threading.Thread(target=read_stdout),
                       threading.Thread(target=lambda: stderr.extend(proc.stderr))]
            for t in readers:
                t.start()
            started = time.monotonic()
            try:
                first_row.wait(wait_s)
                running_before = u.sandprobe_processes(tag=tag)
                snapshot = list(lines)
                seen_before_signal = first_row.is_set()  # the reader goes on after the signal
                sep = [i for i, l in enumerate(snapshot) if l.startswith("-----")]
                rows_before = [l for l in snapshot[sep[0] + 1:] if l.strip()] if sep else []
                if to_group:
                    os.killpg(proc.pid, sig)  # what a terminal's Ctrl-C does
                else:
                    os.kill(proc.pid, sig)
                signalled_at = time.monotonic()
                code = proc.wait(timeout=30)
                stopped_in = time.monotonic() - signalled_at
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                for t in readers:
                    t.join(5)
                proc.stdout.close()
                proc.stderr.close()
            errors = b"".join(stderr).decode("utf-8", "replace")
            context = "exit %s\n--- stdout ---\n%s\n--- stderr ---\n%s" % (
                code, "\n".join(lines), errors[-3000:])
            # Collected before any assertion: a leftover must be found while it is still there.
            report = u.load_report(out) if os.path.exists(os.path.join(out, "report.json")) else None
            leftovers = u.sandprobe_processes(
                nonce_hash=report["nonce_hash"] if report else None, tag=tag)
            canary_left = os.listdir(canary_dir)
            fill_left = u.fill_files_of_run(report["nonce_hash"]) if report else []
            if leftovers:  # never leave them to the next test: kill them after recording
                for pid, _ in leftovers:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass

            self.assertTrue(first_row.is_set() or time.monotonic() - started >= wait_s)
            self.assertIsNotNone(report, "no report.json after the signal\n" + context)
            self.assertEqual(leftovers, [], "processes left behind\n" + context)
            self.assertEqual(canary_left, [], "canary folder not cleaned\n" + context)
            self.assertEqual(fill_left, [], "fill-tmp files left in /tmp\n" + context)
            self.assertTrue(report["interrupted"], context)
            self.assertLess(stopped_in, 15, "took %.1f s to stop after the signal" % stopped_in)
            self.assertIn("interrupted", errors)

            required_fail = any(v["verdict"] == "FAIL" and v["level"] == "required"
                                for v in report["verdicts"])
            self.assertEqual(code, 1 if required_fail else 2, context)
            self.assertEqual(report["summary"]["exit_code"], code)
            self.assertTrue(os.path.exists(os.path.join(out, "matrix.md")))
            u.check_junit(os.path.join(out, "junit.xml"), report)
            with open(os.path.join(out, "matrix.md"), encoding="utf-8") as f:
                self.assertIn("**Interrupted**: the run stopped before every probe ended", f.read())

            # The rows measured before the signal are in the report, with real observations.
            labels = {r["label"]: r["probe"] for r in report["rows"]}
            verdicts = u.verdicts(report, "bubblewrap")
            measured = [labels[label] for label in labels
                        if any(l.startswith(label + " ") for l in rows_before)]
            if first_row.is_set():
                self.assertTrue(measured, "first row seen but not matched: %r" % rows_before)
            for probe in measured:
                with self.subTest(probe=probe):
                    self.assertIn(probe, verdicts)
                    self.assertIn(verdicts[probe]["verdict"], ("PASS", "FAIL", "SKIP"),
                                  verdicts[probe]["reason"])
                    for o in report["observations"]:
                        if o["probe"] == probe:
                            self.assertNotIn(o["evidence"]["ending"], ("interrupted", "not_run"))
            # The loop cannot have finished (it runs to a 15 s deadline): the run really was cut.
            loop = [o for o in report["observations"] if o["probe"] == "res.cpu-loop"]
            for o in loop:
                self.assertNotEqual(o["evidence"]["ending"], "deadline", o)
            self.assertNotEqual(verdicts.get("res.cpu-loop", {}).get("verdict"), "PASS")
            if os.environ.get("E2E_VERBOSE"):
                print("\n" + context)
            return code, report, running_before, seen_before_signal

    def test_leftover_scan_finds_a_tagged_probe(self):
        # The "nothing left behind" assertions are only as good as this scan: prove it sees one.
        tag = uuid.uuid4().hex
        script = "# sandprobe probe selftest.sleeper\nimport time\ntime.sleep(60)\n"
        p = subprocess.Popen([u.python_for_env_i(), "-c", script],
                             env=dict(os.environ, SANDPROBE_E2E_TAG=tag))
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not u.sandprobe_processes(tag=tag):
                time.sleep(0.05)
            self.assertEqual([pid for pid, _ in u.sandprobe_processes(tag=tag)], [p.pid])
            self.assertEqual(u.sandprobe_processes(tag=uuid.uuid4().hex), [])
        finally:
            p.kill()
            p.wait()
        # And by the nonce in a deployed script's config, for processes with a cleared env.
        import hashlib
        import sys
        nonce = uuid.uuid4().hex[:16]
        script = subprocess.check_output(
            [sys.executable, os.path.join(u.HOME, "probes", "lib", "assemble.py"),
             os.path.join(u.HOME, "probes", "res", "cpu-loop"), "--params",
             '{"heartbeat_s": 1, "max_s": 20}', "--nonce", nonce, "--invocation", "iscan"])
        p = subprocess.Popen(["env", "-i", u.python_for_env_i(), "-c", script.decode()],
                             stdout=subprocess.DEVNULL)
        try:
            want = hashlib.sha256(nonce.encode()).hexdigest()[:12]
            # 20 s, not 5: once (a fresh-clone ci/test, -j 2 beside other e2e tests) the scan
            # had not found it in 5 s; not reproduced alone or under 4 busy loops. The message
            # says whether the process was still alive and what its cmdline began with.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not u.sandprobe_processes(nonce_hash=want):
                time.sleep(0.05)
            cmdline = u._read("/proc/%d/cmdline" % p.pid) or b""
            self.assertEqual([pid for pid, _ in u.sandprobe_processes(nonce_hash=want)], [p.pid],
                             "probe exit status %r, cmdline %r" % (p.poll(), cmdline[:200]))
            self.assertEqual(u.sandprobe_processes(nonce_hash="0" * 12), [])
        finally:
            p.kill()
            p.wait()

    def test_sigint_to_the_process_group(self):
        self.interrupt_run(signal.SIGINT, to_group=True)

    def test_sigterm(self):
        self.interrupt_run(signal.SIGTERM, to_group=False)

    def test_sigint_while_the_loops_run(self):
        # Later: the balloon row (a FAIL) is complete and both cpu-loop sandboxes are spinning.
        code, report, running, balloon_printed = self.interrupt_run(
            signal.SIGINT, to_group=True, wait_for_label="memory balloon", wait_s=12)
        self.assertTrue(running, "no probe process was running when the signal was sent")
        balloon = u.verdicts(report, "bubblewrap")["res.memory-balloon"]
        # In CI (both cores busy) the row was not printed within 12 s and the signal cut the
        # balloon itself, or kept it from starting: INCONCLUSIVE, rightly. A row printed before
        # the signal must be the FAIL; one cut by it may be INCONCLUSIVE or FAIL, never a PASS.
        # (Printed before the signal: the final matrix after it prints the row too.)
        if balloon_printed:
            self.assertEqual(balloon["verdict"], "FAIL", balloon)
        else:
            self.assertIn(balloon["verdict"], ("FAIL", "INCONCLUSIVE"), balloon)
        if balloon["verdict"] == "FAIL":  # a required FAIL measured: the gate says so (exit 1)
            self.assertEqual(code, 1)
        loops = [o for o in report["observations"] if o["probe"] == "res.cpu-loop"]
        self.assertEqual(sorted(o["evidence"]["ending"] for o in loops),
                         ["interrupted", "interrupted"], loops)


class HarnessKilled(unittest.TestCase):
    """SIGKILL of sandprobe itself (no handler runs): every sandprobe-reaper dies with it
    (PR_SET_PDEATHSIG) and takes its tree along; `sandprobe cleanup` removes the planted canary
    folder that could not be removed."""

    def test_sigkill_leaves_no_process_and_cleanup_removes_canaries(self):
        u.require_bwrap()
        with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-sigkill-") as base:
            canary_dir = os.path.join(base, "canary")
            tag = uuid.uuid4().hex
            env = dict(os.environ, SANDPROBE_E2E_TAG=tag)
            env.setdefault("SANDPROBE_HOME", u.HOME)
            proc = subprocess.Popen([u.BIN, "run", "--out", os.path.join(base, "out"),
                                     "--canary-dir", canary_dir], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
            try:
                # Wait until a cpu-loop probe is in flight: it runs for 15 s, so the kill below
                # lands while it runs. Waiting for "two processes" and sampling once after a 10 s
                # deadline read [] in CI once (2 busy cores: the sample fell between two probes).
                deadline, nonce_hash, loop_seen = time.monotonic() + 40, None, False
                while time.monotonic() < deadline and not loop_seen:
                    nonce_hash = nonce_hash or u.nonce_hash_of_tagged(tag)
                    cmdlines = [u._read("/proc/%d/cmdline" % pid) or b""
                                for pid, _ in u.sandprobe_processes(tag=tag)]
                    loop_seen = nonce_hash is not None and any(
                        b"# sandprobe probe res.cpu-loop" in c for c in cmdlines)
                    if not loop_seen:
                        time.sleep(0.1)
                time.sleep(1.0)  # let the loops start inside their sandboxes
                running = u.sandprobe_processes(tag=tag)  # what the kill below cuts
            finally:
                proc.kill()
                proc.wait()
            self.assertIsNotNone(nonce_hash, "no probe of the run was seen running")
            self.assertTrue(loop_seen, "no res.cpu-loop probe of the run was seen within 40 s")
            self.assertTrue(running, "nothing of the run was running when it was killed")
            # Reapers get SIGTERM from the kernel, give their trees the 2 s grace, then SIGKILL.
            deadline, left = time.monotonic() + 10, None
            while time.monotonic() < deadline:
                left = u.sandprobe_processes(nonce_hash=nonce_hash, tag=tag)
                if not left:
                    break
                time.sleep(0.1)
            for pid, _ in left or []:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.assertEqual(left, [], "processes outlived a SIGKILLed harness by 10 s")
            planted = os.listdir(canary_dir)
            self.assertEqual(len(planted), 1, planted)  # nothing could remove it
            self.assertTrue(planted[0].startswith("sp-"))
            r = u.run_sandprobe(["cleanup", "--canary-dir", canary_dir, "--tmp",
                                 os.path.join(base, "no-fill-files-here")])
            self.assertEqual(r.returncode, 0, r.describe())
            self.assertIn(planted[0], r.stdout)
            self.assertEqual(os.listdir(canary_dir), [])

    def test_cleanup_spares_a_live_run(self):
        # `sandprobe cleanup` is for leftovers of killed runs; a run still in progress owns its
        # planted canary folder, and removing it turns that run's token row INCONCLUSIVE.
        u.require_bwrap()
        with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-cleanup-") as base:
            canary_dir, out = os.path.join(base, "canary"), os.path.join(base, "out")
            suite = u.write_suite(base, "live", ["res.cpu-loop", "cred.sa-token"])
            env = dict(os.environ)
            env.setdefault("SANDPROBE_HOME", u.HOME)
            proc = subprocess.Popen(
                [u.BIN, "run", "--suite", suite, "--out", out, "--canary-dir", canary_dir,
                 "--jobs", "2", "--default-timeout", "2", "--grace", "1"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                env=env)
            try:
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not (
                        os.path.isdir(canary_dir) and os.listdir(canary_dir)):
                    time.sleep(0.05)
                live = os.listdir(canary_dir)
                r = u.run_sandprobe(["cleanup", "--canary-dir", canary_dir, "--tmp",
                                     os.path.join(base, "no-fill-files-here")])
                still_there = os.listdir(canary_dir)
                errors = proc.communicate(timeout=60)[1].decode("utf-8", "replace")
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            self.assertEqual(len(live), 1, live)
            self.assertEqual(r.returncode, 0, r.describe())
            self.assertEqual(still_there, live,
                             "cleanup removed the canary folder of a live run:\n" + r.stdout)
            report = u.load_report(out)
            v = u.verdicts(report, "bubblewrap")["cred.sa-token"]
            self.assertEqual(v["verdict"], "PASS", v["reason"] + "\n" + errors)


DAEMON = """\
import signal
import time
emit("progress", step="daemonizing")
if os.fork() == 0:                      # docs/traps.md, trap 16: setsid + double fork escapes killpg
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # and a polite SIGTERM is not enough
        for fd in (0, 1, 2):
            os.close(fd)
        time.sleep(120)
        os._exit(0)
    os._exit(0)
time.sleep(0.3)
result(OUTCOME, "positive", None, "left a daemon behind")
"""


class DaemonizingProbe(unittest.TestCase):
    """A normal run (no signal): a probe that setsid()s and double-forks a SIGTERM-ignoring
    sleeper in both arms (local control, `env -i` command candidate) leaves nothing behind."""

    def test_no_daemon_survives_the_run(self):
        u.require_sandprobe()
        with tempfile.TemporaryDirectory(prefix="sandprobe-e2e-daemon-") as base:
            home, suite, candidate = u.make_selftest_home(base, {"daemon": ("daemon", DAEMON)})
            out = os.path.join(base, "out")
            tag = uuid.uuid4().hex
            r = u.run_sandprobe(["run", "--home", home, "--suite", suite, "--sandbox", candidate,
                                 "--out", out, "--canary-dir", os.path.join(base, "canary"),
                                 "--default-timeout", "20", "--grace", "2"],
                                timeout=60, env={"SANDPROBE_E2E_TAG": tag})
            report = u.load_report(out) if os.path.exists(os.path.join(out, "report.json")) else None
            leftovers = u.sandprobe_processes(
                nonce_hash=report["nonce_hash"] if report else None, tag=tag)
            for pid, _ in leftovers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.assertIsNotNone(report, r.describe())
            self.assertEqual(leftovers, [], "daemons survived the run\n" + r.describe())
            self.assertEqual(r.returncode, 0, r.describe())
            for arm in ("local", "env-i"):
                ev = u.observations(report, arm)["selftest.daemon"]["evidence"]
                self.assertGreaterEqual(ev["driver_facts"]["descendants_killed"], 1, (arm, ev))
                self.assertLess(ev["duration_s"], 10, (arm, ev))


if __name__ == "__main__":
    unittest.main()
