"""The probe catalogue as a whole: every probes/<category>/<name>/ folder, its probe.yaml against
the schema and its probe.py against its probe.yaml, and every probe once in bubblewrap.
A new probe is checked here without a line added (the per-probe tests sit beside each probe)."""
import ast
import os
import unittest

from probe_testing import LIB, PROBES, all_probe_ids, descriptor, probe_dir, run_in_bwrap


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
    net_failure()'s ("blocked", "refused", "error"), the results of the preamble's helpers that
    judge (run_metadata_probe(), judge_pair(), tcp_echo()) and its crash record ("error")."""
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
    if "run_metadata_probe(" in source:  # the preamble's result: reach_of() or no_target
        found |= {"reached", "refused", "no_reply", "error", "blocked", "no_target"}
    if "judge_pair(" in source:  # the preamble's closing results of a concurrent pair
        found |= {"no_pair", "not_concurrent", "isolated"}
    # The preamble's TCP echo exchange, net_failure() included, when its outcome reaches result()
    # (net.live-change reports its tries under one outcome of its own).
    passes_on = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and n.func.id == "result" and n.args
                    and not isinstance(n.args[0], ast.Constant) for n in ast.walk(tree))
    if "tcp_echo(" in source and passes_on:
        found |= {"reached", "no_echo", "blocked", "refused", "error"}
    return found


class DescriptorTest(unittest.TestCase):
    EXPECTED_IDS = ["cred.cloud-metadata", "cred.env-secrets", "cred.keyring", "cred.sa-token",
                    "cred.sa-token-power", "fs.dev-shm", "fs.docker-socket", "fs.fill-tmp",
                    "fs.inherited-fds", "fs.unix-sockets",
                    "fs.write-exec", "fs.write-root", "kernel.boundary", "kernel.syscalls",
                    "net.abstract-unix", "net.dns", "net.dns-resolver", "net.docker-api",
                    "net.gateway", "net.held-open", "net.host-loopback", "net.http-by-name",
                    "net.icmp", "net.interfaces", "net.k8s-api", "net.live-change", "net.metadata",
                    "net.metadata-alt", "net.metadata-azure", "net.metadata-gcp",
                    "net.metadata-imdsv2", "net.metadata-ipv6", "net.node-local",
                    "net.policy-endport", "net.policy-ipblock-except", "net.policy-named-port",
                    "net.policy-peer-and", "net.policy-sctp", "net.sibling",
                    "net.tcp-by-ip",
                    "net.udp",
                    "platform.runtime-class", "priv.capabilities", "priv.no-new-privs",
                    "priv.setuid", "priv.uid", "priv.userns", "proc.host-pids", "proc.outlives-call", "proc.sibling",
                    "proc.tty-inject",
                    "res.cpu-loop",
                    "res.fork-bomb", "res.memory-balloon", "res.output-flood",
                    "state.persists"]
    NO_CONTROL = {"platform.runtime-class", "cred.sa-token-power"}
    KEYS = ["id", "label", "category", "description", "requires_control", "drivers", "params",
            "classify"]
    EXPOSURES = {"exposed", "contained", "unknown"}
    # multi-call probes; late evidence (http driver); what the harness plants; how it deploys;
    # what it measures when that is not traffic (not judged where the mechanism cannot change it);
    # the claim of limits it judges (not judged without it)
    OPTIONAL = ["calls", "concurrent", "after_call_s", "needs", "deploy", "measures", "claim",
                "beyond_policy"]

    def test_catalogue_is_complete(self):
        self.assertEqual(all_probe_ids(), self.EXPECTED_IDS)

    def test_descriptors_follow_the_schema(self):
        for pid in all_probe_ids():
            with self.subTest(probe=pid):
                d = descriptor(pid)
                self.assertEqual([k for k in d if k not in self.OPTIONAL], self.KEYS)
                self.assertEqual(d["id"], pid)
                self.assertEqual(d.get("measures"),
                                 "interfaces" if pid == "net.interfaces" else None)
                self.assertEqual(d["category"], pid.split(".")[0])
                # An outside pair of an allow-list policy: traffic beyond the policy as written.
                self.assertEqual(d.get("beyond_policy"), True if pid.startswith("net.policy-")
                                 else None)
                self.assertTrue(0 < len(d["label"]) <= 32 and d["description"])
                # net.held-open needs the in-cluster canary, the one canary that holds flows;
                # net.node-local the node address only the kubernetes driver gives; a
                # net.policy-* row asks about one field of a NetworkPolicy.
                # net.live-change is judged against the kubernetes driver's change of the pod.
                kube = pid in ("platform.runtime-class", "net.held-open", "net.node-local",
                               "net.live-change") or \
                    pid.startswith("net.policy-")
                # Judged on the API server's own answer (admission, the token's reviews).
                self.assertIs(d["requires_control"], pid not in self.NO_CONTROL)
                # The terminal mode exists in the process drivers only (command and local).
                self.assertEqual(d["drivers"], ["kubernetes"] if kube else ["command", "local"]
                                 if pid == "proc.tty-inject" else ["all"])
                for name, spec in d["params"].items():
                    self.assertLessEqual(set(spec), {"default", "description", "from_limit",
                                                     "factor", "unit"}, name)
                    self.assertIn("default", spec)
                    self.assertTrue(spec["description"])
                c = d["classify"]
                self.assertEqual(list(c)[:2], ["outcomes", "killed"])
                self.assertLessEqual(set(c), {"outcomes", "killed", "timed_out", "deadline",
                                              "exceeds", "fact", "output", "quiet_after_call",
                                              "crashed", "still_running", "canary_hit_kinds",
                                              "live_target", "live_change"})
                if "live_target" in c:  # a refusal re-read against a control's reach
                    self.assertEqual(c["outcomes"].get(c["live_target"]["refused"]), "exposed")
                    for o in c["live_target"]["reached"]:
                        self.assertEqual(c["outcomes"].get(o), "exposed")
                if "still_running" in c:  # heartbeats to a canary parameter, after_call_s to hear
                    self.assertIn(c["still_running"]["param"], d["params"])
                    self.assertGreater(d.get("after_call_s", 0), 0)
                if "fact" in c:  # a driver fact decides when the probe defers (outcome unknown)
                    self.assertLessEqual(set(c["fact"]), {"name", "above_zero", "zero"})
                    self.assertLessEqual({c["fact"].get("above_zero", "exposed"),
                                          c["fact"].get("zero", "contained")}, self.EXPOSURES)
                endings = {c[k] for k in ("killed", "timed_out", "deadline") if k in c}
                self.assertLessEqual(set(c["outcomes"].values()) | endings, self.EXPOSURES)
                if "claim" in d:  # a claim row names a parameter that carries a claim of limits
                    self.assertIn(d["params"][d["claim"]].get("from_limit"), ("noexec", "seccomp"))
                if "exceeds" in c:  # the claim check names a parameter sized from a limit
                    self.assertIn(c["exceeds"]["param"], d["params"])
                    self.assertIn("from_limit", d["params"][c["exceeds"]["param"]])

    def test_params_in_script_match_descriptor(self):
        for pid in all_probe_ids():
            with self.subTest(probe=pid):
                read = params_read(parse_probe(pid)[1])
                defaults = {k: v["default"] for k, v in descriptor(pid)["params"].items()}
                self.assertEqual(read, defaults)

    def test_every_outcome_is_classified_and_every_classified_outcome_exists(self):
        for pid in all_probe_ids():
            with self.subTest(probe=pid):
                source, tree = parse_probe(pid)
                emitted = outcomes_emitted(tree, source)
                if pid == "platform.runtime-class":  # the kubernetes driver answers for it
                    emitted |= {"rejected", "admitted"}
                if pid in ("net.held-open", "net.node-local"):  # tcp_echo() etc. feed facts only
                    emitted = outcomes_emitted(tree, "")
                self.assertEqual(emitted, set(descriptor(pid)["classify"]["outcomes"]))

    def test_shared_helpers_live_in_the_preamble_only(self):
        # http_get() and resolve() are shared by the network probes through the preamble, which
        # every deployed script carries; a copy in a probe body would drift from it.
        with open(os.path.join(LIB, "preamble.py")) as f:
            preamble = f.read()
        for name in ("http_get", "resolve"):
            self.assertIn("def %s(" % name, preamble)
            for pid in all_probe_ids():
                self.assertNotIn("def %s(" % name, parse_probe(pid)[0], pid)

    def test_every_probe_has_its_tests_beside_it(self):
        # probes/<category>/<name>/test_<name>.py, dashes as underscores: one module name per
        # probe, so the files never shadow each other on one sys.path.
        for pid in all_probe_ids():
            with self.subTest(probe=pid):
                category, name = pid.split(".", 1)
                tests = sorted(f for f in os.listdir(probe_dir(pid)) if f.startswith("test_"))
                self.assertEqual(tests, ["test_%s.py" % name.replace("-", "_")])
        self.assertEqual(sorted(f for f in os.listdir(PROBES) if f.startswith("test_")), [])


class SandboxedTest(unittest.TestCase):
    """The probes inside bubblewrap (own network namespace, read-only root)."""

    def test_every_probe_runs_on_debian_python(self):
        """Each probe once under /usr/bin/python3 in the sandbox: one result, never a crash."""
        metadata = {"target": "127.0.0.1:80", "timeout_s": 1}
        params = {"net.metadata": metadata, "net.metadata-imdsv2": metadata,
                  "net.metadata-gcp": metadata, "net.metadata-azure": metadata,
                  "net.metadata-alt": metadata,
                  "net.metadata-ipv6": {"target": "[::1]:80", "timeout_s": 1},
                  "cred.cloud-metadata": {"targets": ["127.0.0.1:80", "[::1]:80"],
                                          "canary_sha256": "00", "timeout_s": 1},
                  "net.k8s-api": {"target": "127.0.0.1:443", "timeout_s": 1},
                  "net.tcp-by-ip": {"target": "127.0.0.1:80", "timeout_s": 1},
                  "net.held-open": {"tcp_target": "127.0.0.1:7000",
                                    "udp_target": "127.0.0.1:7001", "timeout_s": 1},
                  "net.gateway": {"targets": ["127.0.0.1:80"], "timeout_s": 1},
                  "net.docker-api": {"targets": ["127.0.0.1:2375"], "timeout_s": 1},
                  "net.dns": {"server": "127.0.0.1:53", "timeout_s": 1},
                  "net.http-by-name": {"url": "http://127.0.0.1:80/", "timeout_s": 1},
                  "res.memory-balloon": {"target_mib": 32},
                  "net.live-change": {"target": "127.0.0.1:9", "window_s": 0.3},
                  **{"net.policy-" + f: {"inside": ["in=127.0.0.1:9/tcp"],
                                         "outside": ["out=127.0.0.1:9/udp"], "timeout_s": 1}
                     for f in ("endport", "named-port", "ipblock-except", "peer-and", "sctp")},
                  "fs.fill-tmp": {"target_mib": 8},
                  "fs.dev-shm": {"target_mib": 8},
                  "res.fork-bomb": {"target": 16, "hold_s": 0.1},
                  "net.udp": {"target": "127.0.0.1:7", "timeout_s": 1},
                  "net.icmp": {"target": "127.0.0.1", "timeout_s": 1},
                  "net.host-loopback": {"port": 9, "timeout_s": 1},
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


if __name__ == "__main__":
    unittest.main()
