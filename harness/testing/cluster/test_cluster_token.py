"""Real cluster, NetworkPolicy enforced: cred.sa-token-power with the real API server's RBAC. The
test makes two ServiceAccounts and RBAC bindings mid-test (kubectl, as the administrator); each
pod mounts its account's token (a bound token the kubelet projects) and asks the API server itself
(kubernetes.default.svc, through kube-proxy) with SelfSubjectRulesReview and
SelfSubjectAccessReview: the answers, the reasons and the refusals are the real authorizer's.

One run, beside the k8s-open control:
  k8s-deny-egress      the shipped hardened manifest: no token mounted -> PASS
  k8s-token-default    automounted token of the `default` account, no binding: only what every
                       authenticated account may do -> PASS (cred.sa-token still FAILs: readable)
  k8s-token-secrets    account `secret-reader` with a RoleBinding to get/list secrets -> FAIL
                       naming "get,list secrets in sandprobe"
  k8s-token-edit       account `editor` with a ClusterRoleBinding to ClusterRole edit -> FAIL
                       naming create pods and pods/exec
  k8s-token-denied     the editor's token under deny-all egress, in a pod that waited for
                       kube-router (settled re-run): the API cannot be reached -> INCONCLUSIVE
                       (net.k8s-api's question), never PASS. Its fresh column is measured: a fresh
                       pod may reach the API before kube-router programs it (test_cluster_enforce).
The gVisor manifest's token row runs in test_cluster_gvisor (its RuntimeClass is there).
Traffic rule: every target is inside the cluster's namespace.
"""
import json
import os
import sys
import unittest

import cluster_util as c
from cluster_util import u
import real_manifests as rm
import test_cluster_enforce as enforce
from test_cluster_enforce import RealRun, setUpModule, tearDownModule  # noqa: F401

ROW = "cred.sa-token-power"
ACCOUNTS = ("secret-reader", "editor")
RBAC_OBJECTS = [
    {"apiVersion": "v1", "kind": "ServiceAccount",
     "metadata": {"name": "secret-reader", "namespace": c.NS}},
    {"apiVersion": "v1", "kind": "ServiceAccount",
     "metadata": {"name": "editor", "namespace": c.NS}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
     "metadata": {"name": "secret-reader", "namespace": c.NS},
     "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
     "metadata": {"name": "secret-reader", "namespace": c.NS},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                 "name": "secret-reader"},
     "subjects": [{"kind": "ServiceAccount", "name": "secret-reader", "namespace": c.NS}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "sandprobe-editor-edit"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
     "subjects": [{"kind": "ServiceAccount", "name": "editor", "namespace": c.NS}]},
]


def token_template(account=None):
    spec = "automountServiceAccountToken: true, runtimeClassName: runc"
    if account:
        spec += ", serviceAccountName: %s" % account
    return "jobTemplate: {spec: {template: {spec: {%s}}}}" % spec


class TokenPower(RealRun):
    @classmethod
    def run_args(cls):
        cluster = enforce.CLUSTER
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": RBAC_OBJECTS})
        cluster.kubectl("apply", "-f", "-", input=doc)
        # The next module finds the cluster as this one did: the accounts and bindings go.
        cls.addClassCleanup(cluster.kubectl, "delete", "-f", "-", "--ignore-not-found",
                            "--wait=false", check=False, input=doc)
        d = cls.tmp.name
        ctl = rm.write_manifest(os.path.join(d, "open.yaml"), "k8s-open")
        deny = rm.copy_shipped(rm.DENY, os.path.join(d, "deny-egress.yaml"), control=ctl,
                               drop=("minPolicyAge",), add=["minPolicyAge: 1s"])
        arms = [deny]
        for name, account, extra in (
                ("k8s-token-default", None, ()),
                ("k8s-token-secrets", "secret-reader", ()),
                ("k8s-token-edit", "editor", ()),
                ("k8s-token-denied", "editor", enforce.SETTLED)):
            arms.append(rm.write_kube_manifest(
                os.path.join(d, name + ".yaml"), name, control=ctl, policy=bool(extra),
                extra=[token_template(account)] + list(extra)))
        suite = u.write_suite(d, "token", [ROW, "cred.sa-token"],
                              params={ROW: {}, "cred.sa-token": {}})
        args = ["--suite", suite]
        for arm in arms:
            args += ["--sandbox", arm]
        return args + rm.FAST

    def result(self, arm):
        return self.cell(arm, ROW)["evidence"]["result"]

    def test_exit_1_and_the_columns(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        self.assertEqual(u.arm_names(self.report, "control"), ["k8s-open"])

    def test_hardened_arm_mounts_no_token_and_passes(self):
        v = self.verdict("k8s-deny-egress", ROW)
        self.assertEqual(v["verdict"], "PASS", v)
        self.assertIn("probe needs no control", v["reason"])
        cell = self.cell("k8s-deny-egress", ROW)
        self.assertEqual((cell["label"], cell["evidence"]["result"]["errno"]),
                         ("no token", "ENOENT"), self.brief("k8s-deny-egress", ROW))

    def test_default_account_token_is_readable_but_has_only_the_default_rules(self):
        v = self.verdict("k8s-token-default", ROW)
        self.assertEqual(v["verdict"], "PASS", self.brief("k8s-token-default", ROW))
        self.assertIn("positive evidence", v["reason"])
        r = self.result("k8s-token-default")
        self.assertEqual((r["outcome"], r["namespace"], r["beyond_defaults"], r["allowed_checks"]),
                         ("defaults_only", c.NS, [], []), r)
        self.assertEqual(len(r["checks"]), 6)
        # The token itself is a finding of its own row.
        self.assertEqual(self.verdict("k8s-token-default", "cred.sa-token")["verdict"], "FAIL")

    def test_role_binding_to_read_secrets_fails_and_names_them(self):
        v = self.verdict("k8s-token-secrets", ROW)
        self.assertEqual(v["verdict"], "FAIL", self.brief("k8s-token-secrets", ROW))
        self.assertEqual(self.cell("k8s-token-secrets", ROW)["label"], "BEYOND DEFAULTS")
        self.assertIn("token can get secrets, list secrets in sandprobe; rules beyond the "
                      "defaults: get,list secrets", v["reason"])
        r = self.result("k8s-token-secrets")
        self.assertEqual(r["allowed_checks"], ["get secrets", "list secrets"])
        # The real authorizer's own words (SelfSubjectAccessReview status.reason).
        self.assertEqual({c_["reason"] for c_ in r["checks"] if c_["allowed"]},
                         {'RBAC: allowed by RoleBinding "secret-reader/sandprobe" of Role '
                          '"secret-reader" to ServiceAccount "secret-reader/sandprobe"'})
        # The reviewed token: its length and a sha256 prefix, never the value.
        f = r["files"][0]
        self.assertRegex(f["sha256_prefix"], r"^[0-9a-f]{12}$")
        self.assertGreater(f["length"], 100)  # a bound token: a signed JWT

    def test_cluster_role_binding_to_edit_fails_naming_pods_and_exec(self):
        v = self.verdict("k8s-token-edit", ROW)
        self.assertEqual(v["verdict"], "FAIL", self.brief("k8s-token-edit", ROW))
        r = self.result("k8s-token-edit")
        self.assertEqual(r["allowed_checks"], ["create pods", "get secrets", "list secrets",
                                               "create pods/exec",
                                               "list secrets in all namespaces"])
        self.assertIn("create pods/exec", v["reason"])

    def test_a_token_whose_api_is_unreachable_is_inconclusive_never_pass(self):
        settled = "k8s-token-denied-settled"
        v = self.verdict(settled, ROW)
        self.assertEqual(v["verdict"], "INCONCLUSIVE", self.brief(settled, ROW))
        self.assertIn("no answer from the API server", v["reason"])
        self.assertEqual(self.cell(settled, "cred.sa-token")["exposure"], "exposed")
        fresh = self.verdict("k8s-token-denied", ROW)
        # A fresh pod that reached the API before kube-router programmed it shows the editor's
        # rules (FAIL); one that did not is INCONCLUSIVE. Never a PASS.
        self.assertIn(fresh["verdict"], ("FAIL", "INCONCLUSIVE"), self.brief("k8s-token-denied",
                                                                             ROW))
        print("\n[TokenPower] fresh denied pod: %s" % fresh["verdict"], file=sys.stderr)

    def test_no_token_in_any_report_and_nothing_left(self):
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name), "rb") as f:
                data = f.read()
            self.assertNotIn(b"eyJ", data, name)  # a JWT's first bytes: no token in a report
        self.assertNotIn("eyJ", self.res.stdout + self.res.stderr)
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
