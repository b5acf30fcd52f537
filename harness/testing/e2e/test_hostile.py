"""E2E: hostile probe output can neither change a verdict nor break a report.

A temp sandprobe home holds a copy of the repo's probes/ plus three selftest probes
(probes/selftest/<name>/, ids selftest.*) that follow the probe contract but misbehave around it:
  flood    10 MB of junk on stdout (and one line far over the record-line bound), then a result
  garbage  invalid UTF-8, NUL/ESC/control bytes on stdout and stderr, a record with the real nonce
           but invalid UTF-8 JSON, then a result whose detail is full of markup and escapes
  forged   a record line with a WRONG nonce claiming the exposed outcome, plain "200 OK REACHED",
           then the real (contained) result, then another forgery
Each emits the exposed outcome when the harness's planted env secret is present (the local control
launches it with the harness environment) and the contained outcome otherwise (the candidate is
`env -i python3`), so control and candidate run identical parameters. No probe touches the network.
"""
import os
import re
import tempfile
import unittest
import xml.etree.ElementTree as ET

import e2e_util as u

FLOOD = """\
line = b"J" * 1023 + b"\\n"
block = line * 1024                      # 1 MiB of junk lines
for _ in range(10):
    os.write(1, block)
os.write(1, b"K" * (200 * 1024) + b"\\n")  # one line far over the 64 KiB record-line bound
result(OUTCOME, "positive", None, "after 10 MB of junk")
"""

HOSTILE_DETAIL = ("pipe | cell | `tick` ``` fence ```` <script>alert(1)</script> ]]> & amp "
                  "\\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 \\r\\b\\x7f\\nsecond line after a newline")

GARBAGE = """\
junk = (b"\\xff\\xfe invalid \\xc3\\x28 \\xed\\xa0\\x80 NUL \\x00 ESC \\x1b[2J\\x1b[31m red "
        b"\\x1b]0;pwned\\x07 BEL \\x07 BS \\x08 CR \\r DEL \\x7f C1 \\xc2\\x9b | `x` ``` </details> ]]>\\n")
os.write(1, junk)
os.write(2, junk * 3)
# The real nonce but invalid UTF-8 inside the JSON: not a record, one foreign line.
os.write(1, ("@@sandprobe %s " % NONCE).encode() + b'{"kind":"progress","x":"\\xff\\xfe"}\\n')
result(OUTCOME, "positive", "E|`<x>`", "@DETAIL@")
os.write(1, junk)
""".replace("@DETAIL@", HOSTILE_DETAIL)

FORGED = """\
forged = ('@@sandprobe 0000000000000000 {"kind":"result","probe":"selftest.forged","seq":2,'
          '"outcome":"exposed_outcome","evidence":"positive","errno":null,'
          '"detail":"forged: the canary answered 200 OK REACHED"}\\n')
os.write(1, forged.encode())
os.write(1, b"HTTP/1.1 200 OK\\n200 OK REACHED\\nREACHED\\n")
os.write(2, forged.replace("0000000000000000", NONCE).encode())  # stderr is never evidence
result(OUTCOME, "positive", None, "the real record")
os.write(1, forged.encode())
"""

PROBES = {
    "flood": ("flood stdout", FLOOD),
    "garbage": ("garbage | `bytes`", GARBAGE),
    "forged": ("forged record", FORGED),
}
EXPECTED_FOREIGN = {"flood": 0, "garbage": 1, "forged": 2}


class HostileOutput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-hostile-")
        base = cls.tmp.name
        home, suite, candidate = u.make_selftest_home(base, PROBES)
        cls.out = os.path.join(base, "out")
        cls.res = u.run_sandprobe(
            ["run", "--home", home, "--suite", suite, "--sandbox", candidate, "--out", cls.out,
             "--canary-dir", os.path.join(base, "canary"), "--default-timeout", "20",
             "--grace", "2"], timeout=90)
        cls.files = {}
        for name in ("matrix.md", "report.json", "junit.xml", "report.tap", "report.html"):
            path = os.path.join(cls.out, name)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    cls.files[name] = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.assertEqual(sorted(self.files), ["junit.xml", "matrix.md", "report.html",
                                              "report.json", "report.tap"], self.res.describe())
        import json
        self.report = json.loads(self.files["report.json"].decode("utf-8"))

    def test_verdicts_follow_the_real_records(self):
        self.assertEqual(self.res.returncode, 0, self.res.describe())
        got = u.verdicts(self.report, "env-i")
        self.assertEqual(sorted(got), ["selftest.%s" % n for n in sorted(PROBES)])
        for probe, v in got.items():
            self.assertEqual(v["verdict"], "PASS", "%s: %s" % (probe, v["reason"]))
            self.assertEqual(v["validated_by"], "local")
        cand, ctl = u.observations(self.report, "env-i"), u.observations(self.report, "local")
        for name in PROBES:
            probe = "selftest." + name
            with self.subTest(probe=probe):
                self.assertEqual(cand[probe]["evidence"]["result"]["outcome"], "contained_outcome")
                self.assertEqual(ctl[probe]["evidence"]["result"]["outcome"], "exposed_outcome")
                self.assertEqual(cand[probe]["exposure"], "contained")
                self.assertEqual(ctl[probe]["exposure"], "exposed")

    def test_forged_record_is_only_a_foreign_line(self):
        obs = u.observations(self.report, "env-i")["selftest.forged"]
        self.assertEqual(obs["evidence"]["result"]["detail"], "the real record")
        self.assertNotIn("forged", obs["reason"])
        self.assertNotIn("REACHED", obs["label"])

    def test_foreign_line_counts(self):
        for arm in ("env-i", "local"):
            obs = u.observations(self.report, arm)
            for name, want in EXPECTED_FOREIGN.items():
                with self.subTest(arm=arm, probe=name):
                    self.assertEqual(obs["selftest." + name]["evidence"]["foreign_lines"], want)

    def test_flood_is_counted_but_bounded(self):
        ev = u.observations(self.report, "env-i")["selftest.flood"]["evidence"]
        self.assertGreaterEqual(ev["stdout_bytes"], 10 * (1 << 20))
        self.assertLessEqual(len(ev["stdout_excerpt"].encode("utf-8")), 16 * 1024)
        self.assertEqual(ev["dropped_records"], 0)

    def test_hostile_detail_survives_in_json_only_as_data(self):
        result = u.observations(self.report, "env-i")["selftest.garbage"]["evidence"]["result"]
        self.assertIn("<script>", result["detail"])
        self.assertIn("\x1b[31m", result["detail"])  # JSON is evidence: kept, escaped by json
        self.assertNotIn(b"\x1b", self.files["report.json"])
        ev = u.observations(self.report, "env-i")["selftest.garbage"]["evidence"]
        self.assertIn("\ufffd", ev["stdout_excerpt"])  # invalid UTF-8 became U+FFFD

    def test_output_files_bounded(self):
        for name, data in self.files.items():
            self.assertLess(len(data), 1 << 20, name)

    def test_junit_parses(self):
        root = ET.fromstring(self.files["junit.xml"])
        cases = root.findall(".//testsuite[@name='env-i']/testcase")
        self.assertEqual(len(cases), 3)
        self.assertEqual([c for c in cases if c.find("failure") is not None], [])
        text = "".join(root.itertext())
        self.assertIn("<script>", text)  # as text, escaped on disk
        self.assertNotIn(b"<script>", self.files["junit.xml"])
        self.assertIsNone(u.CONTROL_BYTES.search(self.files["junit.xml"]))
        u.check_junit(os.path.join(self.out, "junit.xml"), self.report)

    def test_tap_and_html_have_no_control_bytes_and_no_markup(self):
        for name in ("report.tap", "report.html"):
            data = self.files[name]
            data.decode("utf-8")  # valid UTF-8
            self.assertIsNone(u.CONTROL_BYTES.search(data), name)
        self.assertNotIn(b"<script", self.files["report.html"])
        self.assertIn(b"&lt;script&gt;", self.files["report.html"])

    def test_tap_reads_in_a_real_tap14_consumer(self):
        r = u.tap_check(os.path.join(self.out, "report.tap"), ok="true", points=3, bailout="false")
        self.assertEqual(r["tap_errors"], [])

    def test_markdown_has_no_control_bytes(self):
        md = self.files["matrix.md"]
        md.decode("utf-8")  # valid UTF-8
        m = u.CONTROL_BYTES.search(md)
        if m is not None:
            self.fail("raw control byte %r in matrix.md at offset %d: %r" % (
                m.group(), m.start(), md[max(0, m.start() - 60):m.start() + 20]))
        self.assertNotIn("\u009b", md.decode("utf-8"), "C1 CSI survived")

    def test_markdown_structure_holds(self):
        md = self.files["matrix.md"].decode("utf-8")
        lines, blocks = u.markdown_outside_code(md)
        table = [l for l in lines if l.startswith("|")]
        self.assertEqual(len(table), 2 + 3, table)
        for line in table:  # | probe | local (control) | env-i |
            self.assertEqual(u.unescaped_pipes(line), 4, line)
        self.assertEqual(sum(l.count("<details>") for l in lines), 3)
        self.assertEqual(sum(l.count("</details>") for l in lines), 3)
        self.assertGreaterEqual(blocks, 6)  # stdout excerpts of 3 probes x 2 arms at least
        for line in lines:
            self.assertNotIn("<script", line)
            self.assertFalse(line.startswith("second line"), "a detail's newline broke a list item")
            if line.startswith("- "):
                self.assertEqual(u.unescaped_pipes(line), 0, line)

    def test_text_output_has_no_escapes(self):
        for stream, data in (("stdout", self.res.stdout_bytes), ("stderr", self.res.stderr_bytes)):
            self.assertNotIn(b"\x1b", data, stream)
            self.assertIsNone(u.CONTROL_BYTES.search(data), stream)
        self.assertIn("PASS", self.res.stdout)
        rows = [l for l in self.res.stdout.splitlines() if l.startswith(("flood", "garbage",
                                                                           "forged"))]
        self.assertEqual(len(rows), 3, self.res.stdout)
        self.assertLess(len(self.res.stdout_bytes), 64 * 1024)


ANSI = r"""
bad = "\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\u009b31m\r\x08"
# The candidate's outcome is undeclared and full of terminal controls: INCONCLUSIVE, and its
# reason is printed under "not passing" on the terminal.
result(OUTCOME if EXPOSED else bad + "outcome", "positive", bad + "ERR", bad + "detail\nline2")
"""


class HostileOnATerminal(unittest.TestCase):
    """stdout is a TTY (colours on): the only escape sequences are the reporter's own SGR
    colours; a probe's OSC/CSI/C1/BEL/CR bytes never reach the terminal."""

    @classmethod
    def setUpClass(cls):
        import pty
        import subprocess
        u.require_sandprobe()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-tty-")
        base = cls.tmp.name
        home, suite, candidate = u.make_selftest_home(
            base, {"ansi": ("ansi \x1b[5mblink\x1b[0m", ANSI)})
        cls.out = os.path.join(base, "out")
        master, slave = pty.openpty()
        env = dict(os.environ)
        env.pop("NO_COLOR", None)
        proc = subprocess.Popen(
            [u.BIN, "run", "--home", home, "--suite", suite, "--sandbox", candidate, "--out",
             cls.out, "--canary-dir", os.path.join(base, "canary")],
            stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
        os.close(slave)
        data = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the pty
                break
            if not chunk:
                break
            data += chunk
        os.close(master)
        cls.stderr = proc.stderr.read()
        proc.stderr.close()
        cls.code = proc.wait(timeout=60)
        cls.tty = data

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_verdict_inconclusive_exit_2(self):
        self.assertEqual(self.code, 2, self.tty.decode("utf-8", "replace"))
        report = u.load_report(self.out)
        self.assertEqual(u.verdicts(report, "env-i")["selftest.ansi"]["verdict"], "INCONCLUSIVE")

    def test_only_sgr_colours_reach_the_terminal(self):
        text = self.tty.decode("utf-8")
        self.assertIn("\x1b[", text, "colours expected on a TTY")
        without_sgr = re.sub(r"\x1b\[[0-9;]*m", "", text)
        self.assertNotIn("\x1b", without_sgr, "a non-SGR escape reached the terminal")
        self.assertNotIn("\x07", text)
        self.assertNotIn("\u009b", text)
        self.assertNotIn("\x08", text)
        self.assertNotRegex(text, r"\r(?!\n)", "a bare CR reached the terminal")
        self.assertIn("not passing", text)
        self.assertIn("RED", without_sgr)
        self.assertNotIn(b"\x1b", self.stderr)


if __name__ == "__main__":
    unittest.main()
