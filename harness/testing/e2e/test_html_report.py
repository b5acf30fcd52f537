"""E2E: the demo's reports in real consumers. The demo run (ci/demo: the default suite against
bubblewrap and bubblewrap-bounded, the local control) through the real sandprobe binary and real
bubblewrap; then its report.html in a real headless browser (Debian's chromium): a screenshot
(a non-empty PNG of the window's size, showing the verdict colours, so the page's inline style
passed its own Content-Security-Policy) and the DOM after parsing (--dump-dom), read with
html.parser and compared cell by cell with report.json of the same run; and its report.tap in a
real TAP 14 consumer (node-tap's tap-parser, strict). Chromium runs as root here, which needs
--no-sandbox (the page has no script and its CSP forbids any).

The report, the DOM dump and the screenshot stay in SANDPROBE_E2E_OUT (the build tree's
e2e-out/html_report/, set by CMake) for a person to look at.
"""
import html.parser
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest
import zlib

import e2e_util as u

WIDTH, HEIGHT = 1200, 1400  # tall enough for the whole matrix of the default suite
# Backgrounds of the verdict classes in html_reporter.cc's style (RGB).
COLOURS = {"PASS": (0xc8, 0xf0, 0xd0), "FAIL": (0xff, 0xc1, 0xbd),
           "INCONCLUSIVE": (0xfd, 0xe6, 0x8a), "ERROR": (0xfd, 0xe6, 0x8a),
           "SKIP": (0xe6, 0xe8, 0xeb)}


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("chromium is not installed: the HTML e2e test needs Debian's chromium "
                         "(apt-get install -y chromium; ci/bootstrap does); it never skips")


def run_chromium(args, profile, timeout=120):
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + profile] + args
    r = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise AssertionError("chromium %s exit %d:\n%s" % (
            " ".join(args), r.returncode, r.stderr.decode("utf-8", "replace")[-3000:]))
    return r


def read_png(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA non-interlaced PNG (stdlib only)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s is not a PNG" % path)
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise AssertionError("unexpected PNG format %r" % (header,))
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


class Cells(html.parser.HTMLParser):
    """The matrix cells of the parsed page: one dict per <td data-arm>, with its attributes, the
    text of its span.verdict and span.label, and whether it holds a <details>."""

    def __init__(self):
        super().__init__()
        self.cells, self.banners, self.scripts = [], [], 0
        self.cell, self.span, self.banner = None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "td" and "data-arm" in a:
            self.cell = {"attrs": a, "verdict": "", "label": "", "details": False}
            self.cells.append(self.cell)
        elif self.cell is not None and tag == "details":
            self.cell["details"] = True
        elif self.cell is not None and tag == "span" and a.get("class") in ("verdict", "label"):
            self.span = a["class"]
        if tag == "div" and a.get("class") == "banner":
            self.banner = ""

    def handle_endtag(self, tag):
        if tag == "span":
            self.span = None
        elif tag == "td":
            self.cell = None
        elif tag == "div" and self.banner is not None:
            self.banners.append(self.banner)
            self.banner = None

    def handle_data(self, data):
        if self.cell is not None and self.span:
            self.cell[self.span] += data
        if self.banner is not None:
            self.banner += data


class DemoReports(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        chromium()
        cls.out = os.environ.get("SANDPROBE_E2E_OUT") or tempfile.mkdtemp(prefix="sandprobe-html-")
        shutil.rmtree(cls.out, ignore_errors=True)
        os.makedirs(cls.out)
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-e2e-html-")
        # The demo's first run (ci/demo), every format.
        cls.res = u.run_sandprobe(
            ["run", "--suite", os.path.join(u.HOME, "suites", "default.yaml"),
             "--sandbox", u.BWRAP_MANIFEST, "--sandbox", u.BOUNDED_MANIFEST,
             "--out", cls.out, "--canary-dir", os.path.join(cls.tmp.name, "canary")],
            timeout=240)
        cls.report = u.report_or_none(cls.out)
        cls.page = os.path.join(cls.out, "report.html")
        cls.png = os.path.join(cls.out, "report.png")
        profile = os.path.join(cls.tmp.name, "chromium")
        url = "file://" + cls.page
        run_chromium(["--window-size=%d,%d" % (WIDTH, HEIGHT), "--screenshot=" + cls.png, url],
                     profile)
        cls.dom = run_chromium(["--dump-dom", url], profile).stdout.decode("utf-8")
        with open(os.path.join(cls.out, "report.dom.html"), "w", encoding="utf-8") as f:
            f.write(cls.dom)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.assertIsNotNone(self.report, "no report.json\n" + self.res.describe())

    def test_demo_exit_code_and_files(self):
        self.assertIn(self.res.returncode, (1, 2), self.res.describe())
        self.assertEqual(self.report["summary"]["exit_code"], self.res.returncode)
        for name in ("matrix.md", "report.json", "junit.xml", "report.tap", "report.html"):
            self.assertGreater(os.path.getsize(os.path.join(self.out, name)), 500, name)

    def test_screenshot_is_a_png_of_the_window_showing_the_verdict_colours(self):
        size = os.path.getsize(self.png)
        self.assertGreater(size, 20_000, "a screenshot of the matrix is not a few bytes")
        self.assertLess(size, 20_000_000)
        width, height, bpp, rows = read_png(self.png)
        self.assertEqual((width, height), (WIDTH, HEIGHT))
        counts = {}
        for row in rows:
            for x in range(0, len(row), bpp):
                rgb = (row[x], row[x + 1], row[x + 2])
                counts[rgb] = counts.get(rgb, 0) + 1
        self.assertLess(counts.get((255, 255, 255), 0), width * height, "a blank page")
        present = {v["verdict"] for v in self.report["verdicts"]}
        self.assertIn("FAIL", present)
        self.assertIn("PASS", present)
        for verdict in present:
            # A cell is at least ~80 x 20 px of its background; the style was applied (CSP).
            self.assertGreater(counts.get(COLOURS[verdict], 0), 1000,
                               "no %s-coloured cell in the screenshot" % verdict)

    def test_every_cell_in_the_page_equals_the_json(self):
        page = Cells()
        page.feed(self.dom)
        self.assertEqual(page.scripts, 0)
        rows = [r["probe"] for r in self.report["rows"]]
        arms = [a["name"] for a in self.report["arms"]]
        candidates = [a["name"] for a in self.report["arms"] if a["role"] == "candidate"]
        self.assertEqual(len(page.cells), len(rows) * len(arms))
        seen = set()
        verdicts = {(v["probe"], v["candidate"]): v["verdict"] for v in self.report["verdicts"]}
        # A PASS on the sandbox's word is marked in the cell's class (docs/traps.md, trap 47).
        word = {(v["probe"], v["candidate"]) for v in self.report["verdicts"]
                if v["verdict"] == "PASS" and v["evidence_kind"] == "sandbox_word"}
        labels = {}
        for o in self.report["observations"]:
            labels.setdefault((o["probe"], o["arm"]), set()).add(o["label"])
        for cell in page.cells:
            probe, arm = cell["attrs"]["data-probe"], cell["attrs"]["data-arm"]
            family = cell["attrs"].get("data-family", "")  # a control's column per family
            with self.subTest(probe=probe, arm=arm, family=family):
                self.assertNotIn((probe, arm, family), seen, "a cell twice")
                seen.add((probe, arm, family))
                self.assertTrue(cell["details"], "the cell opens no evidence")
                label = cell["label"].strip()
                if arm in candidates:
                    want = verdicts[(probe, arm)]
                    self.assertEqual(cell["attrs"]["data-verdict"], want)
                    self.assertEqual(cell["verdict"].strip(), want)  # the text a person reads
                    self.assertEqual(cell["attrs"]["class"], "cell v-" + want.lower() +
                                     (" word" if (probe, arm) in word else ""))
                else:
                    self.assertNotIn("data-verdict", cell["attrs"])
                    self.assertEqual(cell["attrs"]["class"], "cell control")
                if (probe, arm) in labels:
                    self.assertIn(label, labels[(probe, arm)])
                else:
                    self.assertEqual(label, "\u2014")  # no observation (a SKIP)
        self.assertEqual(seen, {(p, a, "") for p in rows for a in arms})  # this run: no family
        self.assertEqual(len(verdicts), len(rows) * len(candidates))
        self.assertEqual(page.banners, self.report["banners"])

    def test_tap_of_the_same_run_reads_in_a_real_tap14_consumer(self):
        rows, candidates = len(self.report["rows"]), len(u.arm_names(self.report, "candidate"))
        summary = u.tap_check(os.path.join(self.out, "report.tap"),
                              ok="true" if self.res.returncode == 0 else "false",
                              points=rows * candidates, bailout="false")
        self.assertEqual(summary["count"], candidates)
        self.assertEqual(summary["diags_with_verdict"], rows * candidates)
        fails = sum(1 for v in self.report["verdicts"] if v["verdict"] == "FAIL")
        self.assertGreater(fails, 0)


if __name__ == "__main__":
    unittest.main()
