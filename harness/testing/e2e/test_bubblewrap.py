"""E2E: the default run (bubblewrap vs the local control) and manifests/bubblewrap-bounded.yaml,
through the real sandprobe binary and real bubblewrap."""
import os
import re
import unittest
import xml.etree.ElementTree as ET

import e2e_util as u

EXPECTED = {p: "PASS" for p in u.CRED_ROWS + u.NET_ROWS + u.FS_ROWS + u.LATERAL_ROWS +
            u.CALLER_ROWS}
EXPECTED.update({"res.cpu-loop": "FAIL", "res.memory-balloon": "FAIL", "res.fork-bomb": "FAIL",
                 "fs.dev-shm": "PASS", "proc.host-pids": "PASS", "proc.outlives-call": "PASS",
                 "platform.runtime-class": "SKIP",
                 # no limits.noexec / limits.seccomp claim: reported, not judged
                 "fs.write-exec": "SKIP", "kernel.syscalls": "SKIP",
                 "priv.userns": "FAIL",  # bubblewrap nests user namespaces unless --disable-userns
                 # root in the sandbox without CAP_SETUID: cannot drop to try the setuid bit
                 "priv.setuid": "INCONCLUSIVE",
                 # ICMP: no raw socket and no ping group in its own namespace; the host's
                 # loopback is another namespace's; --new-session: no controlling terminal
                 "net.icmp": "PASS", "net.host-loopback": "PASS", "proc.tty-inject": "PASS"})
ROWS = len(u.ALL_PROBES)


class DefaultRun(u.RunCase):
    """`sandprobe run --out D` with everything defaulted (default suite, bubblewrap, local)."""

    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        cls.make_tmp("sandprobe-e2e-default-")
        cls.run_once([], timeout=90)

    def test_exit_code_is_1(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        self.assertEqual(self.report["summary"]["exit_code"], 1)
        self.assertFalse(self.report["interrupted"])

    def test_six_files_written(self):
        # matrix-full.md only when matrix.md had to be cut: the default suite's evidence no
        # longer fits one comment. What the comment leaves out is never a FAIL, ERROR or
        # INCONCLUSIVE row's evidence, and a PASS row's only once SKIP rows' evidence is out too
        # (the cut keeps FAIL, then ERROR/INCONCLUSIVE, then PASS, then SKIP rows).
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["junit.xml", "matrix-full.md", "matrix.md", "report.html",
                          "report.json", "report.tap"])
        for name in os.listdir(self.out):
            self.assertGreater(os.path.getsize(os.path.join(self.out, name)), 100, name)
        with open(os.path.join(self.out, "matrix.md"), encoding="utf-8") as f:
            comment = f.read()
        self.assertLessEqual(len(comment.encode()), 64000)
        left_out = re.search(r"^Evidence left out here \(in `matrix-full.md`\): (.*)$", comment,
                             re.M)
        self.assertIsNotNone(left_out, comment[-2000:])
        skipped = {p for p, v in EXPECTED.items() if v == "SKIP"}
        passed = {p for p, v in EXPECTED.items() if v == "PASS"}
        out = set(re.findall(r"`([^`]+)`", left_out.group(1)))
        self.assertLessEqual(out, skipped | passed)
        if out & passed:
            self.assertTrue(out & skipped, out)

    def test_arms_and_rows(self):
        self.assertEqual(u.arm_names(self.report, "control"), ["local"])
        self.assertEqual(u.arm_names(self.report, "candidate"), ["bubblewrap"])
        self.assertEqual(sorted(r["probe"] for r in self.report["rows"]), u.ALL_PROBES)

    def test_every_control_observation_is_exposed(self):
        # A control that cannot show exposure means a broken probe (docs/traps.md, trap 18).
        controls = u.observations(self.report, "local")
        for probe in u.ALL_PROBES:
            if probe == "platform.runtime-class":
                self.assertNotIn(probe, controls, "%s does not apply to local" % probe)
                continue
            with self.subTest(probe=probe):
                self.assertIn(probe, controls, "the control did not run %s" % probe)
                self.assertEqual(controls[probe]["exposure"], "exposed",
                                 "%s: %s" % (probe, controls[probe]["reason"]))

    def test_verdicts(self):
        got = u.verdicts(self.report, "bubblewrap")
        self.assertEqual({p: v["verdict"] for p, v in got.items()}, EXPECTED)
        for probe, v in got.items():
            self.assertEqual(v["level"], "required")
            if v["verdict"] == "PASS":
                self.assertEqual(v["validated_by"], "local", probe)

    def test_cred_and_net_rows_pass_with_evidence(self):
        cand = u.observations(self.report, "bubblewrap")
        for probe in u.CRED_ROWS + u.NET_ROWS:
            with self.subTest(probe=probe):
                self.assertEqual(cand[probe]["exposure"], "contained", cand[probe]["reason"])
                self.assertEqual(cand[probe]["evidence"]["canary_hits"], [])
        self.assertEqual(cand["net.interfaces"]["evidence"]["result"]["names"], ["lo"])
        self.assertFalse(cand["cred.env-secrets"]["evidence"]["result"]["canary_matches"])
        self.assertFalse(cand["cred.sa-token"]["evidence"]["result"]["canary_readable"])
        # The control got server-side proof from the canaries (not just a self-report).
        ctl = u.observations(self.report, "local")
        for probe in ["net.metadata", "net.dns", "net.tcp-by-ip", "net.k8s-api"]:
            self.assertTrue(ctl[probe]["evidence"]["canary_hits"], probe)

    def test_fs_rows_pass(self):
        cand = u.observations(self.report, "bubblewrap")
        self.assertEqual(cand["fs.write-root"]["evidence"]["result"]["outcome"], "refused")
        self.assertIn("EROFS", cand["fs.write-root"]["evidence"]["result"]["errno"])
        self.assertEqual(cand["fs.fill-tmp"]["evidence"]["result"]["errno"], "ENOSPC")
        shm = cand["fs.dev-shm"]["evidence"]["result"]
        self.assertEqual((shm["outcome"], shm["errno"]), ("shm_full", "ENOSPC"))
        self.assertLessEqual(shm["written_mib"], 64)  # the manifest's --size 64 MiB /dev/shm

    def test_process_rows(self):
        cand = u.observations(self.report, "bubblewrap")
        local = u.observations(self.report, "local")
        pids = cand["proc.host-pids"]["evidence"]["result"]
        self.assertEqual((pids["outcome"], pids["foreign"]), ("own_only", 0))
        self.assertGreater(local["proc.host-pids"]["evidence"]["result"]["foreign"], 0)
        # The detached process: killed with bubblewrap's PID namespace, alive after the local call.
        self.assertEqual(cand["proc.outlives-call"]["evidence"]["driver_facts"]["survivors"], 0)
        self.assertEqual(local["proc.outlives-call"]["exposure"], "exposed")
        bomb = cand["res.fork-bomb"]["evidence"]["result"]
        self.assertEqual((bomb["outcome"], bomb["forked"]), ("all_forked", bomb["target"]))

    def test_loop_and_balloon_fail_honestly(self):
        cand = u.observations(self.report, "bubblewrap")
        loop = cand["res.cpu-loop"]["evidence"]
        self.assertEqual(loop["ending"], "deadline")
        self.assertEqual(loop["driver_facts"]["ended_by"], "harness deadline")
        self.assertIsNone(loop["result"])
        self.assertGreaterEqual(loop["duration_s"], loop["deadline_s"])
        balloon = cand["res.memory-balloon"]["evidence"]["result"]
        self.assertEqual(balloon["outcome"], "target_reached")
        self.assertEqual(balloon["allocated_mib"], balloon["target_mib"])

    def test_runtime_class_skips_with_reason(self):
        v = u.verdicts(self.report, "bubblewrap")["platform.runtime-class"]
        self.assertEqual(v["verdict"], "SKIP")
        self.assertIn("kubernetes", v["reason"])
        self.assertNotIn("platform.runtime-class", u.observations(self.report, "bubblewrap"))

    def test_junit(self):
        root = ET.parse(os.path.join(self.out, "junit.xml")).getroot()
        suites = root.findall("testsuite") if root.tag == "testsuites" else [root]
        bwrap = [s for s in suites if s.get("name") == "bubblewrap"]
        self.assertEqual(len(bwrap), 1, [s.get("name") for s in suites])
        cases = bwrap[0].findall("testcase")
        self.assertEqual(len(cases), ROWS)
        ids = sorted(c.get("name").split(" ")[0] for c in cases)
        self.assertEqual(ids, u.ALL_PROBES)
        failed = sorted(c.get("name").split(" ")[0] for c in cases if c.find("failure") is not None)
        skipped = [c.get("name").split(" ")[0] for c in cases if c.find("skipped") is not None]
        self.assertEqual(failed, sorted(p for p, v in EXPECTED.items() if v == "FAIL"))
        self.assertEqual(sorted(skipped), sorted(p for p, v in EXPECTED.items() if v == "SKIP"))
        errors = [p for p, v in EXPECTED.items() if v in ("INCONCLUSIVE", "ERROR")]
        self.assertEqual(bwrap[0].get("tests"), str(ROWS))
        self.assertEqual(bwrap[0].get("failures"), str(len(failed)))
        self.assertEqual(bwrap[0].get("skipped"), str(len(skipped)))
        self.assertEqual(bwrap[0].get("errors"), str(len(errors)))
        u.check_junit(os.path.join(self.out, "junit.xml"), self.report)

    def test_stdout_shows_the_matrix(self):
        out = self.res.stdout
        self.assertIn("local (control)", out)
        self.assertIn("bubblewrap", out)
        labels = {r["probe"]: r["label"] for r in self.report["rows"]}
        for probe, verdict in EXPECTED.items():
            rows = [line for line in out.splitlines() if line.startswith(labels[probe] + " ")]
            self.assertEqual(len(rows), 1, "%s row on stdout:\n%s" % (labels[probe], out))
            self.assertIn(verdict, rows[0])
        self.assertIn("exit code 1", out)
        self.assertNotIn("\x1b", out, "ANSI escapes on a non-TTY stdout")

    def test_markdown_matrix(self):
        with open(os.path.join(self.out, "matrix.md"), encoding="utf-8") as f:
            md = f.read()
        table = [line for line in md.splitlines() if line.startswith("|")]
        self.assertEqual(len(table), 2 + ROWS)
        self.assertIn("| SA token | READABLE | unreadable · **PASS** |", table)

    def test_canary_dir_cleaned(self):
        self.assertEqual(os.listdir(self.canary_dir), [])


class BoundedRun(u.RunCase):
    """manifests/bubblewrap-bounded.yaml: timeout ends the loop, prlimit stops the balloon."""

    @classmethod
    def setUpClass(cls):
        u.require_bwrap()
        base = cls.make_tmp("sandprobe-e2e-bounded-")
        suite = u.write_suite(base, "bounded",
                              ["res.cpu-loop", "res.memory-balloon", "res.fork-bomb"])
        # Harness deadline = the manifest's 10 s timeout + 2 s grace: the sandbox must win.
        cls.run_once(["--suite", suite, "--sandbox", u.BOUNDED_MANIFEST, "--grace", "2"],
                     timeout=90)

    def test_exit_code_0(self):
        self.assertEqual(self.res.returncode, 0, self.res.describe())

    def test_loop_ended_by_the_sandbox(self):
        v = u.verdicts(self.report, "bubblewrap-bounded")["res.cpu-loop"]
        self.assertEqual(v["verdict"], "PASS", v["reason"])
        self.assertEqual(v["validated_by"], "local")
        obs = u.observations(self.report, "bubblewrap-bounded")["res.cpu-loop"]
        ev = obs["evidence"]
        killed = (ev["ending"] == "exited" and ev["exit_code"] in (124, 137)) or \
                 (ev["ending"] == "signaled" and ev["signal"] in (9, 15))
        self.assertTrue(killed, ev)
        self.assertEqual(ev["driver_facts"]["ended_by"], "sandbox")
        self.assertAlmostEqual(ev["deadline_s"], 12.0)
        self.assertLess(ev["duration_s"], ev["deadline_s"])
        self.assertGreaterEqual(ev["duration_s"], 9.5)  # timeout 10 s, not an early crash
        self.assertIsNone(ev["result"])
        self.assertIsNotNone(ev["last_progress"])
        # The control loop ran into the harness deadline: that is what validates the row.
        ctl = u.observations(self.report, "local")["res.cpu-loop"]
        self.assertEqual(ctl["evidence"]["ending"], "deadline")
        self.assertEqual(ctl["exposure"], "exposed")

    def test_balloon_memory_error(self):
        v = u.verdicts(self.report, "bubblewrap-bounded")["res.memory-balloon"]
        self.assertEqual(v["verdict"], "PASS", v["reason"])
        result = u.observations(self.report, "bubblewrap-bounded")["res.memory-balloon"][
            "evidence"]["result"]
        self.assertEqual(result["outcome"], "memory_error")
        self.assertEqual(result["target_mib"], 512)  # 2 x limits.memory 256Mi
        self.assertLess(result["allocated_mib"], 256)
        ctl = u.observations(self.report, "local")["res.memory-balloon"]["evidence"]["result"]
        self.assertEqual(ctl["outcome"], "target_reached")

    def test_fork_bomb_capped_by_rlimit_nproc(self):
        # prlimit --nproc binds because the sandbox runs as nobody (root is exempt).
        v = u.verdicts(self.report, "bubblewrap-bounded")["res.fork-bomb"]
        self.assertEqual(v["verdict"], "PASS", v["reason"])
        result = u.observations(self.report, "bubblewrap-bounded")["res.fork-bomb"]["evidence"][
            "result"]
        self.assertEqual((result["outcome"], result["errno"]), ("capped", "EAGAIN"))
        self.assertEqual(result["target"], 128)  # 2 x limits.pids 64
        self.assertLessEqual(result["forked"], 64)


if __name__ == "__main__":
    unittest.main()
