"""proc.tty-inject: on a terminal that is its controlling terminal the pushed word lands in the
terminal's pending input (what the shell would read next), without a newline; bubblewrap's
--new-session takes the controlling terminal away (EPERM); a pipe shows no terminal at all."""
import fcntl
import os
import pty
import subprocess
import termios
import unittest

from probe_testing import BWRAP, ProbeTestCase, Run, assemble, new_ids, probe_dir


def pending_input(slave):
    """The input waiting on the terminal, read as a shell reads it (non-canonical, no wait)."""
    attrs = termios.tcgetattr(slave)
    attrs[3] &= ~(termios.ICANON | termios.ECHO)
    attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 0, 0
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    os.set_blocking(slave, False)
    try:
        return os.read(slave, 4096)
    except BlockingIOError:
        return b""


def run_on_terminal(prefix=(), controlling=True, python="python3"):
    """Runs the probe with a fresh pseudo-terminal as stdin (and, with controlling, as the
    controlling terminal of its new session) -> (Run, pending input bytes)."""
    master, slave = pty.openpty()
    nonce, invocation = new_ids()
    script = assemble(probe_dir("proc.tty-inject"), {}, nonce, invocation)

    def child():
        os.setsid()
        if controlling:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        proc = subprocess.run(list(prefix) + [python, "-u", "-c", script], stdin=slave,
                              capture_output=True, text=True, preexec_fn=child, timeout=30)
        return Run(nonce, invocation, proc.stdout, proc.stderr, proc.returncode), \
            pending_input(slave)
    finally:
        os.close(master)
        os.close(slave)


def legacy_tiocsti():
    try:
        with open("/proc/sys/dev/tty/legacy_tiocsti") as f:
            return f.read().strip()
    except OSError:
        return "absent"


class TtyInjectProbeTest(ProbeTestCase):
    def test_a_pipe_on_stdin_is_no_terminal(self):
        nonce, invocation = new_ids()
        script = assemble(probe_dir("proc.tty-inject"), {}, nonce, invocation)
        proc = subprocess.run(["python3", "-u", "-c", script], stdin=subprocess.PIPE,
                              capture_output=True, text=True, start_new_session=True, timeout=30)
        r = Run(nonce, invocation, proc.stdout, proc.stderr, proc.returncode).result
        self.assertEqual((r["outcome"], r["terminals"]), ("no_tty", []))
        self.assertEqual(r["not_terminals"]["fd0"], "p")
        self.assertEqual(r["not_terminals"]["/dev/tty"], "ENXIO")
        self.assertIn("tty: true", r["detail"])

    def test_the_controlling_terminal_gets_the_word_without_a_newline(self):
        if os.geteuid() != 0 and legacy_tiocsti() == "0":
            self.skipTest("legacy_tiocsti 0 and not root: TIOCSTI is refused here")
        run, pending = run_on_terminal()
        r = run.result
        self.assertEqual(r["outcome"], "pushed", r)
        tag = ("SANDPROBE-TTY %s %s" % (run.nonce, run.invocation)).encode()
        self.assertEqual(pending, tag)  # exactly the word: no newline, nothing else
        self.assertEqual(r["terminals"][0]["terminal"], "fd0")
        self.assertEqual(r["terminals"][0]["tioclinux"], "ENOTTY")  # a pty is no virtual console
        self.assertEqual(r["legacy_tiocsti"], legacy_tiocsti())

    def test_bubblewrap_new_session_takes_the_terminal_away(self):
        at = BWRAP.index("--remount-ro")
        run, pending = run_on_terminal(BWRAP[:at] + ["--new-session"] + BWRAP[at:])
        r = run.result
        # Legacy TIOCSTI off: EIO, before the kernel looks at the session.
        want = "EIO" if legacy_tiocsti() == "0" else "EPERM"
        self.assertEqual((r["outcome"], r["errno"]), ("refused", want), r)
        self.assertEqual(pending, b"")

    def test_bubblewrap_without_new_session_types_into_the_shell(self):
        # (With legacy TIOCSTI off it is EIO like the rest: test_..._new_session covers that.)
        if legacy_tiocsti() == "0":
            self.skipTest("legacy_tiocsti 0: the kernel refuses TIOCSTI without CAP_SYS_ADMIN")
        run, pending = run_on_terminal(BWRAP)
        self.assertEqual(run.result["outcome"], "pushed", run.result)
        self.assertIn(run.nonce.encode(), pending)


if __name__ == "__main__":
    unittest.main()
