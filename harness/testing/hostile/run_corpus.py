#!/usr/bin/env python3
"""Runs the hostile output corpus (cases.py) through real drivers and checks every case.

One sandprobe run per driver: a suite of every case (probes/selftest/<case>/ in a temp home), the
driver's hardened arm as the candidate, the local control. A case passes when, in that driver:
  - its verdict equals the honest probe's (which must itself be PASS: else every case fails),
    and its candidate observation holds the honest result (contained, not a forged one);
  - report.json validates against reports/schema/report.schema.json (python3-jsonschema);
  - junit.xml parses with pugixml (build/bin/junit_check) with only XML 1.0 characters, and the
    case's testcase is there and ok;
  - report.tap reads in tap-parser (strict) and the case's point is ok with verdict PASS;
  - report.html, rendered by headless chromium (--dump-dom), has the case's cell with PASS;
  - matrix.md has the case's table row intact (its cells, no raw control byte) outside fences;
  - sandprobe's own stdout/stderr carry no escape or control byte, and it stays bounded in time
    and memory (max RSS below MAX_RSS_MIB).
A document-level failure (a format that does not parse) fails every case of that run.
Drivers: bubblewrap (command), docker-cli (command, docker run), docker-runc and docker-gvisor
(Docker Engine API driver), http (the run-code fixture in isolated mode), kubernetes (the real
cluster of ci/cluster, pods through its kubelet; SANDPROBE_CLUSTER_KUBECONFIG names it). See
docs/design.md "Hostile output corpus".

Library (e2e tests) and CLI (ci/bench/reliability.d/hostile): run_corpus.py --drivers a,b
[--cases a,b] [--quick] [--json FILE]; exit 0 when every case passed, 1 when not, 2 on setup error.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
E2E = os.path.join(HERE, "..", "e2e")
sys.path.insert(0, E2E)
sys.path.insert(0, HERE)

import cases as corpus  # noqa: E402
import e2e_util as u  # noqa: E402

SCHEMA = os.path.join(u.HOME, "reports", "schema", "report.schema.json")
JUNIT_CHECK = (os.environ.get("SANDPROBE_JUNIT_CHECK")
               or os.path.join(os.path.dirname(u.BIN), "junit_check"))
MAX_RSS_MIB = 512  # sandprobe reads 64 MiB lines and 10^6 lines streaming: far below this
# The heavy cases (10^6 lines, one 64 MiB line) run where the bytes really travel differently:
# a pipe from a local namespace, a container's attach stream under runc and under gVisor. The
# docker CLI pipe, the fixture (it keeps 64 KiB per stream and answers in one JSON body) and the
# kubelet (its log file through pods/log) add minutes, not another reader.
HEAVY_DRIVERS = ("bubblewrap", "docker-runc", "docker-gvisor")
QUICK_CASES = ("honest", "forged-guessed-nonce", "forged-marker-variants", "forged-inside-detail",
               "split-bytewise", "nul-bytes", "invalid-utf8", "osc-title", "markdown-fences",
               "html-details", "xml-control-chars", "tap-breakers", "output-after-result",
               "close-stdout-keep-running")
ALL_DRIVERS = ("bubblewrap", "docker-cli", "docker-runc", "docker-gvisor", "http", "kubernetes")
DOCKER_DRIVERS = ALL_DRIVERS[1:]

# Defects the corpus found and that are NOT fixed yet: counted as failed (passed / total stays
# honest); the e2e tests require exactly these to fail, so a fix shows as a test to update.
# None today. The kubernetes driver's merged pods/log streams (forged-on-stderr, split-with-pauses,
# nul-bytes) were listed here until the driver kept the probe's stderr out of the log stream
# (docs/traps.md, trap 44). Entries are {(driver, case): why}.
KNOWN_DEFECTS = {}

DESCRIPTOR = """\
id: selftest.{name}
label: {label}
category: selftest
description: >-
  hostile output corpus case {name} (harness/testing/hostile/cases.py). Exposed when the marker
  file exists (the local control), contained otherwise (a sandbox with its own filesystem).
requires_control: true
drivers: [all]
params:
  marker: {{default: "", description: "a file only the machine that runs the harness has"}}
classify:
  outcomes: {{exposed_outcome: exposed, contained_outcome: contained, error: unknown}}
  killed: unknown
  deadline: unknown
"""


class SetupError(Exception):
    """The corpus could not run at all (no binary, no daemon, ...): exit 2, no case counted."""


def selected_cases(names=None, quick=False):
    cases = [c for c in corpus.CASES if (not quick or c[0] in QUICK_CASES)]
    if names:
        unknown = set(names) - {c[0] for c in corpus.CASES}
        if unknown:
            raise SetupError("unknown cases: %s" % ", ".join(sorted(unknown)))
        cases = [c for c in corpus.CASES if c[0] in names or c[0] == "honest"]
    return cases


def make_home(base, cases):
    """A sandprobe home with the repo's probes/ and one selftest probe per case, the marker file
    and the suite. Returns (home, suite)."""
    home = os.path.join(base, "home")
    shutil.copytree(os.path.join(u.HOME, "probes"), os.path.join(home, "probes"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    marker = os.path.join(base, "marker")
    with open(marker, "w") as f:
        f.write("only here\n")
    for name, description, body, _ in cases:
        d = os.path.join(home, "probes", "selftest", name)
        os.makedirs(d)
        with open(os.path.join(d, "probe.yaml"), "w") as f:
            f.write(DESCRIPTOR.format(name=name, label=json.dumps("hostile " + name)))
        with open(os.path.join(d, "probe.py"), "w") as f:
            f.write(corpus.PRELUDE + body)
    ids = ["selftest." + c[0] for c in cases]
    suite = u.write_suite(base, "hostile-corpus", ids, params={i: {"marker": marker} for i in ids})
    return home, suite


def copy_manifest(src, dst, name):
    """A shipped manifest with its name replaced and its control made the local arm. A 10 s
    timeout becomes 60 s: the corpus tests how output is read, not the sandbox's clock, and
    64 MiB through a 0.5-CPU container's attach stream took over 10 s on this 2-core machine at
    load 40 (59 of 64 MiB read by then; at ordinary load it takes a few seconds)."""
    with open(src) as f:
        text = f.read()
    text = text.replace('"10", python3', '"60", python3').replace("timeout: 10s", "timeout: 60s")
    text = re.sub(r"^name: .*$", "name: " + name, text, count=1, flags=re.M)
    text, n = re.subn(r"^control: .*$", "control: " + json.dumps(u.LOCAL_MANIFEST), text,
                      count=1, flags=re.M)
    if n != 1:
        raise SetupError("%s has no control: line" % src)
    with open(dst, "w") as f:
        f.write(text)
    return dst


class Driver:
    """One candidate arm: setup() -> (manifest, extra sandprobe args, env); teardown()."""

    def __init__(self, name):
        self.name, self.fixture = name, None

    def setup(self, base):
        m = os.path.join(base, self.name + ".yaml")
        arm = "hostile-" + self.name
        if self.name == "bubblewrap":
            u.require_bwrap()
            return copy_manifest(u.BWRAP_MANIFEST, m, arm), [], {}
        require_docker()
        if self.name == "docker-cli":
            return copy_manifest(os.path.join(u.MANIFESTS, "docker", "cli-hardened.yaml"), m,
                                 arm), [], {}
        if self.name == "docker-runc":
            return copy_manifest(os.path.join(u.MANIFESTS, "docker", "hardened.yaml"), m,
                                 arm), [], {}
        if self.name == "docker-gvisor":
            return copy_manifest(os.path.join(u.MANIFESTS, "docker", "gvisor.yaml"), m,
                                 arm), [], {}
        if self.name == "http":
            # isolated: a fresh hardened container per evaluation; the default 64 KiB per stream
            self.fixture = u.Fixture("isolated", cwd=base)
            return u.write_http_manifest(m, arm, self.fixture.url, timeout_s=10), [], {}
        if self.name == "kubernetes":
            # The real cluster of ci/cluster, started by the cluster test that runs this driver
            # (harness/testing/cluster/test_cluster_nodes.py) and named by its kubeconfig.
            kubeconfig = os.environ.get("SANDPROBE_CLUSTER_KUBECONFIG")
            if not kubeconfig:
                raise SetupError("the kubernetes driver runs against the real cluster: start it "
                                 "with ci/cluster/up and set SANDPROBE_CLUSTER_KUBECONFIG (ctest "
                                 "-L cluster does)")
            sys.path.insert(0, os.path.join(u.HOME, "harness", "testing", "cluster"))
            import real_manifests as rm
            return (rm.write_manifest(m, arm, control=u.LOCAL_MANIFEST, policy=True,
                                      timeout=15), [], {"KUBECONFIG": kubeconfig})
        raise SetupError("unknown driver %s" % self.name)

    def teardown(self):
        if self.fixture is not None:
            self.fixture.stop()
            self.fixture = None


def require_docker():
    r = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}",
                        "sandprobe-probe:local"], capture_output=True, timeout=60)
    if r.returncode != 0:
        raise SetupError("docker or the image sandprobe-probe:local is not there (run "
                         "ci/services/dockerd and ci/images/probe-image): %s" %
                         r.stderr.decode(errors="replace").strip()[:300])


def run_sandprobe(args, env, timeout):
    """sandprobe with its max RSS (wait4): (returncode, stdout, stderr, wall, maxrss MiB)."""
    full_env = dict(os.environ, SANDPROBE_HOME=u.HOME, NO_COLOR="1")
    full_env.update(env)
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([u.BIN] + args, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             env=full_env)
        deadline = start + timeout
        try:
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    p.send_signal(signal.SIGINT)  # sandprobe cleans up what it started
                    pid, status, usage = os.wait4(p.pid, 0)
                    p.returncode = -1
                    break
                time.sleep(0.1)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: sandprobe removes its containers, then us
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            raise
        code = p.returncode if p.returncode == -1 else os.waitstatus_to_exitcode(status)
        p.returncode = code
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read(), time.monotonic() - start, usage.ru_maxrss / 1024


def check_json(report, failures_all):
    import jsonschema
    with open(SCHEMA) as f:
        schema = json.load(f)
    per_probe = {}
    validator = jsonschema.Draft202012Validator(schema)
    for e in validator.iter_errors(report):
        path = list(e.absolute_path)
        probe = None
        if len(path) >= 2 and path[0] in ("observations", "verdicts"):
            probe = report[path[0]][path[1]].get("probe")
        msg = "report.json: %s at %s" % (e.message[:200], "/".join(map(str, path)))
        if probe:
            per_probe.setdefault(probe, []).append(msg)
        else:
            failures_all.append(msg)
    return per_probe


def check_html(page, tmp):
    """chromium --dump-dom of report.html -> {(arm, probe): verdict text}."""
    from test_html_report import Cells, run_chromium
    dom = run_chromium(["--dump-dom", "file://" + page], os.path.join(tmp, "chromium")).stdout
    cells = Cells()
    cells.feed(dom.decode("utf-8"))
    # A control shown once per address family has a data-family; the corpus has none, so the
    # key stays (arm, probe), and a second cell of one key would be a defect the caller sees.
    found = {}
    for c in cells.cells:
        key = (c["attrs"].get("data-arm"), c["attrs"].get("data-probe"))
        if c["attrs"].get("data-family"):
            key += (c["attrs"]["data-family"],)
        if key in found:
            raise AssertionError("report.html has two cells for %r" % (key,))
        found[key] = c["verdict"].strip()
    return found, cells.scripts


def markdown_rows(md):
    """Table rows of matrix.md outside code fences: {probe: row line}."""
    lines, _ = u.markdown_outside_code(md)
    rows = {}
    for line in lines:
        m = re.match(r"^\| hostile ([a-z0-9-]+) \|", line)  # the row's label (DESCRIPTOR)
        if m:
            rows.setdefault("selftest." + m.group(1), []).append(line)
    return lines, rows


def run_driver(driver_name, cases, base, log=print):
    """One sandprobe run of `cases` in `driver_name`; -> dict with per-case results and facts."""
    os.makedirs(base)
    home, suite = make_home(base, cases)
    driver = Driver(driver_name)
    out = os.path.join(base, "out")
    try:
        manifest, extra, env = driver.setup(base)
        arm = "hostile-" + driver_name
        code, stdout, stderr, wall, rss = run_sandprobe(
            ["run", "--home", home, "--suite", suite, "--sandbox", manifest, "--out", out,
             "--canary-dir", os.path.join(base, "canary"), "--grace", "2"] + extra, env,
            timeout=600)
    finally:
        driver.teardown()
    facts = {"driver": driver_name, "exit": code, "wall_s": round(wall, 1),
             "max_rss_mib": round(rss, 1), "cases": {}}
    everyone = []  # failures that hit every case of the run
    if code == -1:
        everyone.append("sandprobe did not finish within 600 s (a hang)")
    if rss > MAX_RSS_MIB:
        everyone.append("sandprobe max RSS %.0f MiB over %d MiB" % (rss, MAX_RSS_MIB))
    for stream, data in (("stdout", stdout), ("stderr", stderr)):
        if u.CONTROL_BYTES.search(data) or b"\xc2\x9b" in data or b"\xc2\x9d" in data:
            everyone.append("sandprobe %s carries a control or escape byte" % stream)
        if len(data) > 256 * 1024:
            everyone.append("sandprobe %s is %d bytes" % (stream, len(data)))
    files = {}
    for name in ("report.json", "junit.xml", "report.tap", "report.html", "matrix.md",
                 "matrix-full.md"):
        path = os.path.join(out, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                files[name] = f.read()
        elif name != "matrix-full.md":  # written only when matrix.md is cut
            everyone.append("%s was not written (exit %d): %s" % (
                name, code, stderr.decode("utf-8", "replace")[-400:]))
    per = {c[0]: [] for c in cases}

    def fail(case, msg):
        per[case].append(msg)

    report = None
    if "report.json" in files:
        try:
            report = json.loads(files["report.json"].decode("utf-8"))
        except ValueError as e:
            everyone.append("report.json does not parse: %s" % e)
    if report is not None:
        for probe, msgs in check_json(report, everyone).items():
            if probe.startswith("selftest.") and probe[9:] in per:
                per[probe[9:]].extend(msgs)
            else:
                everyone.extend(msgs)
        verdicts = u.verdicts(report, arm)
        cand = u.observations(report, arm)
        ref = verdicts.get("selftest.honest", {}).get("verdict")
        if ref != "PASS":
            everyone.append("the honest probe's verdict is %s, not PASS: %s" % (
                ref, verdicts.get("selftest.honest", {}).get("reason")))
        for name in per:
            probe = "selftest." + name
            v = verdicts.get(probe)
            if v is None:
                fail(name, "no verdict")
                continue
            if v["verdict"] != ref:
                fail(name, "verdict %s (honest: %s): %s" % (v["verdict"], ref, v["reason"]))
            evidence = cand.get(probe, {}).get("evidence") or {}
            res = evidence.get("result") or {}
            if res.get("outcome") != "contained_outcome":
                fail(name, "candidate result outcome %r" % res.get("outcome"))
            if name == "forged-on-stderr" and not evidence.get("stderr_bytes"):
                # Every driver keeps stderr as stderr (kubernetes: the termination message,
                # trap 44): read as nothing, it was lost or merged into stdout.
                fail(name, "the line written to stderr was not read as stderr (stderr_bytes %r)"
                     % evidence.get("stderr_bytes"))
            facts["cases"][name] = {"verdict": v["verdict"],
                                    "duration_s": (cand.get(probe, {}).get("evidence") or {})
                                    .get("duration_s")}
    if "junit.xml" in files:
        r = subprocess.run([JUNIT_CHECK, os.path.join(out, "junit.xml")], capture_output=True,
                           timeout=60)
        try:
            j = json.loads(r.stdout)
        except ValueError:
            j = {"ok": False, "error": "junit_check exit %d: %s" % (r.returncode, r.stderr[-300:])}
        if not j.get("ok"):
            everyone.append("junit.xml: %s %s" % (j.get("error", ""), j.get("bad_chars", [])[:5]))
        tcs = (j.get("suites") or {}).get(arm, {})
        for name in per:
            kinds = [k for t, k in tcs.items() if t.split(" ")[0] == "selftest." + name]
            if kinds != ["ok"]:
                fail(name, "junit testcase: %s" % kinds)
    if "report.tap" in files:
        try:
            tap = u.tap_check(os.path.join(out, "report.tap"))
        except AssertionError as e:
            everyone.append("report.tap: %s" % str(e)[:600])
            tap = None
        if tap is not None:
            for name in per:
                pts = [a for a in tap["asserts"]
                       if a.get("probe") == "selftest." + name and a.get("candidate") == arm]
                if len(pts) != 1 or not pts[0]["ok"] or pts[0].get("verdict") != "PASS":
                    fail(name, "tap point: %s" % pts)
    if "report.html" in files:
        try:
            cells, scripts = check_html(os.path.join(out, "report.html"), base)
        except AssertionError as e:
            everyone.append("report.html in chromium: %s" % str(e)[:400])
            cells, scripts = {}, 0
        if scripts:
            everyone.append("report.html holds %d <script> elements" % scripts)
        for name in per:
            got = cells.get((arm, "selftest." + name), "")
            if not got.startswith("PASS"):
                fail(name, "html cell: %r" % got)
    for mdname in ("matrix.md", "matrix-full.md"):
        if mdname not in files:
            continue
        md = files[mdname]
        try:
            text = md.decode("utf-8")
            lines, rows = markdown_rows(text)
        except (UnicodeDecodeError, AssertionError) as e:
            everyone.append("%s: %s" % (mdname, e))
            lines, rows = [], {}
        if u.CONTROL_BYTES.search(md):
            everyone.append("%s carries a raw control byte" % mdname)
        header = [l for l in lines if l.startswith("| probe")]
        width = u.unescaped_pipes(header[0]) if header else None
        if width is None:
            everyone.append("%s has no table header" % mdname)
        opened = sum(l.count("<details>") for l in lines)
        closed = sum(l.count("</details>") for l in lines)
        if opened != closed:
            everyone.append("%s: %d <details> but %d </details>" % (mdname, opened, closed))
        for name in per:
            got = rows.get("selftest." + name, [])
            if len(got) != 1 or u.unescaped_pipes(got[0]) != width or "PASS" not in got[0]:
                fail(name, "%s row: %r" % (mdname, [g[:200] for g in got]))
    facts["run_failures"] = everyone  # these fail every case of the run
    # The honest reference is not a hostile case: it is counted by failing the others.
    hostile = [k for k in per if k != "honest"]
    facts["passed"] = 0 if everyone else sum(1 for k in hostile if not per[k])
    facts["total"] = len(hostile)
    facts["failures"] = {k: v for k, v in per.items() if v}
    facts["known_defects"] = sorted(k for k in facts["failures"]
                                    if (driver_name, k) in KNOWN_DEFECTS)
    log("%-14s %2d/%2d cases passed  exit %s  %5.1f s  max RSS %.0f MiB" % (
        driver_name, facts["passed"], facts["total"], code, wall, rss))
    for msg in everyone:
        log("  FAILED every case: %s" % msg[:800])
    for k, v in facts["failures"].items():
        known = KNOWN_DEFECTS.get((driver_name, k))
        log("  FAILED %s%s: %s" % (k, " (known defect, %s)" % known if known else "",
                                   "; ".join(v)[:800]))
    return facts


def run_corpus(drivers, case_names=None, quick=False, keep=None, log=print):
    """Every selected case through every driver (heavy cases only on HEAVY_DRIVERS)."""
    if not os.access(JUNIT_CHECK, os.X_OK):
        raise SetupError("junit_check not built at %s (ci/build)" % JUNIT_CHECK)
    u.require_sandprobe()
    cases = selected_cases(case_names, quick)
    tmp = keep or tempfile.mkdtemp(prefix="sandprobe-hostile-")
    results = {}
    try:
        for d in drivers:
            subset = [c for c in cases if not c[3] or d in HEAVY_DRIVERS]
            try:
                results[d] = run_driver(d, subset, os.path.join(tmp, d), log)
            except (AssertionError, SetupError) as e:
                raise SetupError("%s: %s" % (d, e))
    finally:
        # Chromium's helpers may still write into their profile for a moment after an interrupt.
        for _ in range(10 if keep is None else 0):
            shutil.rmtree(tmp, ignore_errors=True)
            if not os.path.exists(tmp):
                break
            time.sleep(0.5)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--drivers", default=",".join(ALL_DRIVERS))
    ap.add_argument("--cases", default="")
    ap.add_argument("--quick", action="store_true", help="QUICK_CASES only (no heavy case)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep", help="run in this directory and keep it")
    ap.add_argument("--section", help="print a `## SECTION` of name: value lines (the "
                    "reliability benchmark); per-driver detail goes to stderr")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # cleanup as on Ctrl-C
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with `&`
    start = time.monotonic()
    log = (lambda line: print(line, file=sys.stderr)) if a.section else print
    drivers = [d for d in a.drivers.split(",") if d]
    try:
        results = run_corpus(drivers, [c for c in a.cases.split(",") if c], a.quick, a.keep,
                             log=log)
    except SetupError as e:
        print("setup error: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: every sandprobe run and fixture was stopped",
              file=sys.stderr)
        return 130
    passed = sum(r["passed"] for r in results.values())
    total = sum(r["total"] for r in results.values())
    cases = selected_cases([c for c in a.cases.split(",") if c], a.quick)
    summary = {"passed": passed, "total": total, "cases": len(cases) - 1, "drivers": drivers,
               "quick": a.quick, "elapsed_s": round(time.monotonic() - start, 1),
               "per_driver": {d: {k: r[k] for k in ("passed", "total", "exit", "wall_s",
                                                    "max_rss_mib", "run_failures", "failures",
                                                    "known_defects")}
                              for d, r in results.items()}}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=2)
    if a.section:
        print("## %s" % a.section)
    print("hostile cases passed / total: %d / %d" % (passed, total))
    if a.section:
        print("cases (besides the honest reference): %d" % summary["cases"])
        print("heavy cases on: %s" % ("none (--quick)" if a.quick else ", ".join(
            d for d in drivers if d in HEAVY_DRIVERS)))
        for d, r in results.items():
            print("%s: %d / %d  (%.1f s, sandprobe max RSS %.0f MiB)" % (
                d, r["passed"], r["total"], r["wall_s"], r["max_rss_mib"]))
        print("elapsed: %.1f s" % summary["elapsed_s"])
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
