"""End-to-end, no cluster: what the kubernetes driver would submit and the files ci/kubernetes
ships, read offline through the REAL sandprobe binary.

  Render      `sandprobe render` of manifests/kubernetes/deny-egress.yaml: the hardened defaults.
  CiManifests ci/kubernetes/*.yaml parse, RBAC verbs are exactly the driver's.

Every scene that needs a cluster runs on the real one of ci/cluster (harness/testing/cluster,
ctest label cluster): the k3s case, enforcement, two nodes, writable roots, RBAC bindings made
mid-test, a pending canary, a hung API server, cleanup, and the API server's own acceptance of
what `render` prints (test_cluster_nodes.RenderAccepted).
YAML is read with the small block-style reader below (stdlib only, no PyYAML).
"""
import json
import os
import re
import unittest

import e2e_util as u

KUBE = os.path.join(u.MANIFESTS, "kubernetes")
DENY = os.path.join(KUBE, "deny-egress.yaml")
EGRESS_SUITE = os.path.join(u.HOME, "suites", "kubernetes-egress.yaml")
CI_KUBE = os.path.join(u.HOME, "ci", "kubernetes")
NS = "sandprobe"
RUN_LABEL = "sandprobe.io/run"
# Traffic rows of the egress suite, the metadata row, the cloud metadata shapes and the
# credential row, in the suite's order.
TRAFFIC_ROWS = ["net.dns", "net.http-by-name", "net.tcp-by-ip", "net.udp", "net.k8s-api"]
METADATA = "net.metadata"
CLOUD_ROWS = ["net.metadata-imdsv2", "net.metadata-gcp", "net.metadata-azure"]
CLOUD_CRED = "cred.cloud-metadata"
HELD_OPEN = "net.held-open"
NODE_LOCAL = "net.node-local"


# --- render -------------------------------------------------------------------------------

class Render(unittest.TestCase):
    def test_deny_egress_objects_are_the_hardened_defaults(self):
        u.require_sandprobe()
        res = u.run_sandprobe(["render", "--sandbox", DENY, "--suite", EGRESS_SUITE], timeout=30)
        self.assertEqual(res.returncode, 0, res.describe())
        docs = parse_yaml_documents(res.stdout)
        kinds = [d["kind"] for d in docs]
        self.assertEqual(kinds, ["NetworkPolicy", "Service", "Pod"] + ["Job"] * 13 + ["Pod", "Job"],
                         kinds)
        pol, svc, canary = docs[0], docs[1], docs[2]
        self.assertEqual(pol["apiVersion"], "networking.k8s.io/v1")
        self.assertEqual(pol["spec"]["policyTypes"], ["Egress"])
        self.assertEqual(pol["spec"]["egress"], [])
        self.assertEqual(pol["spec"]["podSelector"]["matchLabels"],
                         {"sandprobe.io/arm": "k8s-deny-egress", RUN_LABEL: "render"})
        # The in-cluster canary: a Service selecting a hardened Pod no arm's policy selects.
        self.assertEqual(svc["spec"]["type"], "ClusterIP")
        self.assertEqual(svc["spec"]["selector"], canary["metadata"]["labels"])
        self.assertNotIn("sandprobe.io/arm", canary["metadata"]["labels"])
        self.assertIs(canary["spec"]["automountServiceAccountToken"], False)
        (cc,) = canary["spec"]["containers"]
        self.assertIs(cc["securityContext"]["readOnlyRootFilesystem"], True)
        self.assertEqual(sorted((p["port"], p["protocol"]) for p in svc["spec"]["ports"]),
                         [(53, "TCP"), (53, "UDP"), (80, "TCP"), (7000, "TCP"), (7001, "UDP")])
        probes = []
        for job in docs[3:16]:
            self.assertEqual(job["apiVersion"], "batch/v1")
            self.assertEqual(job["metadata"]["namespace"], NS)
            spec = job["spec"]
            self.assertEqual(spec["backoffLimit"], 0)
            self.assertGreater(spec["activeDeadlineSeconds"], 10)
            self.assertEqual(spec["ttlSecondsAfterFinished"], 300)
            pod = spec["template"]["spec"]
            # The policy selects these pods: the template carries its labels.
            for k, v in pol["spec"]["podSelector"]["matchLabels"].items():
                self.assertEqual(spec["template"]["metadata"]["labels"][k], v)
            self.assertIs(pod["automountServiceAccountToken"], False)
            self.assertIs(pod["enableServiceLinks"], False)
            self.assertEqual(pod["restartPolicy"], "Never")
            self.assertEqual(pod["securityContext"]["runAsUser"], 65534)
            self.assertIs(pod["securityContext"]["runAsNonRoot"], True)
            (c,) = pod["containers"]
            self.assertEqual(c["name"], "probe")
            self.assertIs(c["securityContext"]["readOnlyRootFilesystem"], True)
            self.assertIs(c["securityContext"]["allowPrivilegeEscalation"], False)
            self.assertEqual(c["securityContext"]["capabilities"]["drop"], ["ALL"])
            self.assertEqual(c["resources"]["limits"]["memory"], "256Mi")
            # stderr to the termination message, out of pods/log (docs/traps.md, trap 44)
            self.assertEqual(c["command"][:4], ["python3", "-I", "-S", "-c"])
            self.assertIn("stderr_tail.py", c["command"][4])
            self.assertEqual(c["command"][5:7], ["/dev/termination-log", "0"])
            self.assertEqual(c["terminationMessagePolicy"], "File")
            probe_cmd = c["command"][7:]
            self.assertEqual(probe_cmd[:9], ["timeout", "-k", "2", "10", "python3", "-I", "-S",
                                             "-u", "-c"])
            self.assertEqual(len(probe_cmd), 10)  # the script is ONE argument
            probes.append(re.match(r"# sandprobe probe (\S+)\n", probe_cmd[9]).group(1))
            self.assertEqual(job["metadata"]["annotations"]["sandprobe.io/probe"], probes[-1])
            self.assertEqual(c["volumeMounts"], [{"mountPath": "/tmp", "name": "tmp"}])
            self.assertEqual(pod["volumes"], [{"emptyDir": {"sizeLimit": "32Mi"}, "name": "tmp"}])
        self.assertEqual(probes, TRAFFIC_ROWS[:4] + [HELD_OPEN, "net.k8s-api", NODE_LOCAL,
                                                     METADATA] + CLOUD_ROWS +
                         [CLOUD_CRED, "net.interfaces"])
        adm = docs[16]
        self.assertEqual(adm["metadata"]["annotations"]["sandprobe.io/probe"],
                         "platform.runtime-class")
        self.assertNotIn("runtimeClassName", adm["spec"])
        self.assertIs(adm["spec"]["automountServiceAccountToken"], False)
        power = docs[17]  # what a mounted token may do: the hardened Job mounts none
        self.assertEqual(power["metadata"]["annotations"]["sandprobe.io/probe"],
                         "cred.sa-token-power")
        self.assertIs(power["spec"]["template"]["spec"]["automountServiceAccountToken"], False)


    def test_an_ipv6_arm_aims_at_the_canarys_ipv6_service(self):
        # manifests/kubernetes/deny-egress-ipv6.yaml (kubernetes.ipFamily): a second canary
        # Service of that family only, selecting the same Pod; the node's addresses and the family
        # in the probe's environment.
        u.require_sandprobe()
        res = u.run_sandprobe(["render", "--sandbox", os.path.join(KUBE, "deny-egress-ipv6.yaml"),
                               "--suite", os.path.join(u.HOME, "suites",
                                                       "kubernetes-dual-stack.yaml")], timeout=30)
        self.assertEqual(res.returncode, 0, res.describe())
        docs = parse_yaml_documents(res.stdout)
        services = [d for d in docs if d["kind"] == "Service"]
        self.assertEqual(len(services), 2, [d["kind"] for d in docs])
        default, v6 = services
        self.assertNotIn("ipFamilies", default["spec"])
        self.assertEqual(v6["metadata"]["name"], default["metadata"]["name"] + "-v6")
        self.assertEqual((v6["spec"]["ipFamilies"], v6["spec"]["ipFamilyPolicy"]),
                         (["IPv6"], "SingleStack"))
        self.assertEqual(v6["spec"]["selector"], default["spec"]["selector"])
        job = next(d for d in docs if d["kind"] == "Job")
        env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
        self.assertEqual(env["SANDPROBE_NODE_IP"]["valueFrom"]["fieldRef"]["fieldPath"],
                         "status.hostIPs")
        self.assertEqual(env["SANDPROBE_IP_FAMILY"]["value"], "IPv6")


# --- ci/kubernetes ---------------------------------------------------------------------------

# Exactly the API calls harness/drivers/kubernetes/kubernetes_driver.cc makes (and `sandprobe
# cleanup --kubernetes`): resource -> verbs, in the namespaced Role.
DRIVER_VERBS = {
    ("batch", "jobs"): {"create", "get", "list", "delete", "deletecollection"},
    ("", "pods"): {"create", "list", "watch", "deletecollection"},
    ("", "pods/log"): {"get"},
    ("", "services"): {"create", "list", "delete"},
    ("", "events"): {"list"},
    ("networking.k8s.io", "networkpolicies"): {"create", "get", "list", "deletecollection"},
}


class CiManifests(unittest.TestCase):
    def load(self, name):
        with open(os.path.join(CI_KUBE, name)) as f:
            return parse_yaml_documents(f.read())

    def test_every_file_parses_and_names_the_namespace(self):
        names = sorted(n for n in os.listdir(CI_KUBE) if n.endswith(".yaml"))
        self.assertEqual(names, ["job.yaml", "namespace.yaml", "rbac-cluster.yaml",
                                 "rbac-live-change.yaml", "rbac.yaml", "resourcequota.yaml",
                                 "sandbox-deny-egress.yaml", "sandbox-open.yaml"])
        for n in names:
            docs = self.load(n)
            self.assertTrue(docs, n)
            for d in docs:
                self.assertIsInstance(d, dict, n)
        (ns,) = self.load("namespace.yaml")
        self.assertEqual((ns["kind"], ns["metadata"]["name"]), ("Namespace", NS))

    def test_quota_is_a_rate_limit_on_jobs_and_pods(self):
        (q,) = self.load("resourcequota.yaml")
        self.assertEqual(q["kind"], "ResourceQuota")
        self.assertEqual(q["metadata"]["namespace"], NS)
        self.assertEqual(sorted(q["spec"]["hard"]), ["count/jobs.batch", "pods"])

    def test_role_has_exactly_the_drivers_verbs(self):
        docs = {d["kind"]: d for d in self.load("rbac.yaml")}
        self.assertEqual(sorted(docs), ["Role", "RoleBinding", "ServiceAccount"])
        got = {}
        for rule in docs["Role"]["rules"]:
            for g in rule["apiGroups"]:
                for r in rule["resources"]:
                    got.setdefault((g, r), set()).update(rule["verbs"])
        self.assertEqual(got, DRIVER_VERBS)
        sa = docs["ServiceAccount"]["metadata"]["name"]
        self.assertEqual(docs["RoleBinding"]["subjects"],
                         [{"kind": "ServiceAccount", "name": sa, "namespace": NS}])
        cluster = {d["kind"]: d for d in self.load("rbac-cluster.yaml")}
        rules = {(r["resources"][0], tuple(r["verbs"])) for r in cluster["ClusterRole"]["rules"]}
        self.assertEqual(rules, {("nodes", ("list",)), ("namespaces", ("get",)),
                                 ("networkpolicies", ("list",)), ("daemonsets", ("list",))})
        # kubernetes.liveChange only: patch on pods (their labels), bound to the same account.
        live = {d["kind"]: d for d in self.load("rbac-live-change.yaml")}
        self.assertEqual(live["Role"]["rules"],
                         [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}])
        self.assertEqual(live["RoleBinding"]["subjects"],
                         [{"kind": "ServiceAccount", "name": sa, "namespace": NS}])

    def test_job_runs_sandprobe_in_cluster_as_the_service_account(self):
        docs = self.load("job.yaml")
        job = next(d for d in docs if d["kind"] == "Job")
        rbac = {d["kind"]: d for d in self.load("rbac.yaml")}
        pod = job["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], rbac["ServiceAccount"]["metadata"]["name"])
        self.assertIn("run", pod["containers"][0]["args"])
        for name in ("sandbox-open.yaml", "sandbox-deny-egress.yaml"):
            with open(os.path.join(CI_KUBE, name)) as f:
                self.assertIn("kubeconfig: in-cluster", f.read())
        res = u.run_sandprobe(["validate", os.path.join(CI_KUBE, "sandbox-open.yaml"),
                               os.path.join(CI_KUBE, "sandbox-deny-egress.yaml")], timeout=30)
        self.assertEqual(res.returncode, 0, res.describe())


# --- a block-style YAML reader (the subset yaml-cpp emits and ci/kubernetes uses) -------------

def parse_yaml_documents(text):
    """Documents of a multi-document YAML text -> list of dicts/lists. Supports block maps and
    sequences, literal blocks (|, |-), plain / "double" / 'single' scalars, flat flow lists and
    maps of scalars, full-line and trailing comments. Raises ValueError on anything else."""
    docs, cur = [], []
    for line in text.split("\n"):
        if line.rstrip() == "---":
            docs.append(cur)
            cur = []
        else:
            cur.append(line)
    docs.append(cur)
    out = []
    for lines in docs:
        r = _Reader(lines)
        if r.peek() is None:
            continue
        value = r.node(r.peek()[0])
        if r.peek() is not None:
            raise ValueError("unparsed line: %r" % r.lines[r.i])
        out.append(value)
    return out


class _Reader:
    def __init__(self, lines):
        self.lines, self.i = list(lines), 0

    def peek(self):
        while self.i < len(self.lines):
            s = self.lines[self.i].strip()
            if s and not s.startswith("#"):
                line = self.lines[self.i]
                return len(line) - len(line.lstrip(" ")), s
            self.i += 1
        return None

    def node(self, indent):
        _, s = self.peek()
        return self.seq(indent) if s == "-" or s.startswith("- ") else self.map(indent)

    def seq(self, indent):
        out = []
        while True:
            p = self.peek()
            if p is None or p[0] != indent or not (p[1] == "-" or p[1].startswith("- ")):
                return out
            rest = p[1][1:].lstrip()
            if not rest:
                self.i += 1
                out.append(self.node(self.peek()[0]))
            elif rest in ("|", "|-"):
                self.i += 1
                out.append(self.literal(indent, rest))
            elif _key(rest) is not None:  # "- key: v": a map whose column is after the dash
                col = indent + len(p[1]) - len(rest)
                self.lines[self.i] = " " * col + rest
                out.append(self.map(col))
            else:
                self.i += 1
                out.append(_scalar(rest))

    def map(self, indent):
        out = {}
        while True:
            p = self.peek()
            if p is None or p[0] < indent:
                return out
            if p[0] > indent or _key(p[1]) is None:
                raise ValueError("bad line in a mapping: %r" % self.lines[self.i])
            key, rest = _key(p[1])
            self.i += 1
            if rest in ("|", "|-"):
                out[key] = self.literal(indent, rest)
            elif rest:
                out[key] = _scalar(rest)
            else:
                q = self.peek()
                nested = q is not None and (q[0] > indent or (q[0] == indent and (
                    q[1] == "-" or q[1].startswith("- "))))
                out[key] = self.node(q[0]) if nested else None

    def literal(self, parent, style):
        block = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and len(line) - len(line.lstrip(" ")) <= parent:
                break
            block.append(line)
            self.i += 1
        while block and not block[-1].strip():
            block.pop()
        if not block:
            return ""
        cut = min(len(b) - len(b.lstrip(" ")) for b in block if b.strip())
        text = "\n".join(b[cut:] for b in block)
        return text if style == "|-" else text + "\n"


def _key(s):
    m = re.match(r'^("[^"]*"|[^\s"\'#\[{][^:]*?):(?:\s+(.*))?$', s)
    if not m:
        return None
    key = json.loads(m.group(1)) if m.group(1).startswith('"') else m.group(1)
    return key, (m.group(2) or "").strip()


def _scalar(s):
    if s.startswith('"'):
        end = s.rindex('"')
        return json.loads(s[:end + 1])
    if s.startswith("'"):
        end = s.rindex("'")
        return s[1:end].replace("''", "'")
    s = re.sub(r"\s+#.*$", "", s)
    if s.startswith("[") and s.endswith("]"):
        inner = s[1:-1].strip()
        return [_scalar(x.strip()) for x in inner.split(",")] if inner else []
    if s.startswith("{") and s.endswith("}"):  # a flat flow map of scalars
        inner = s[1:-1].strip()
        pairs = [_key(x.strip()) for x in inner.split(",")] if inner else []
        if any(p is None or not p[1] for p in pairs):
            raise ValueError("unsupported flow map: %r" % s)
        return {k: _scalar(v) for k, v in pairs}
    if s.startswith(("{", "[", "&", "*", "!", "|", ">")):
        raise ValueError("unsupported YAML: %r" % s)
    if s in ("true", "false"):
        return s == "true"
    if s in ("null", "~"):
        return None
    if re.fullmatch(r"-?[0-9]+", s):
        return int(s)
    if re.fullmatch(r"-?[0-9]+\.[0-9]+", s):
        return float(s)
    return s


if __name__ == "__main__":
    unittest.main()
