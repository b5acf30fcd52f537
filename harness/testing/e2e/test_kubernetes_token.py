"""End-to-end: cred.sa-token-power through the REAL sandprobe binary against the FAKE Kubernetes
API server with --kubelet docker (pods are real containers; see test_kubernetes.py). The pods'
service-account tokens are the fake's; what they may do comes from RBAC objects this test
creates through the fake's API as the administrator, and each pod asks the API server itself
(kubernetes.default.svc -> the fake on its pod network's gateway) with its own token.

One run, six candidate arms beside the k8s-open control:
  k8s-deny-egress, k8s-gvisor   the shipped hardened manifests: no token mounted -> PASS
  k8s-token-default             automounted token of the `default` account, no binding: the
                                bootstrap rules only -> PASS (cred.sa-token still FAILs: readable)
  k8s-token-secrets             account `secret-reader` with a RoleBinding to get/list secrets
                                -> FAIL naming "get,list secrets in sandprobe"
  k8s-token-edit                account `editor` with a ClusterRoleBinding to ClusterRole edit
                                -> FAIL naming create pods and pods/exec
  k8s-token-denied              the editor's token under deny-all egress: the API cannot be
                                reached -> INCONCLUSIVE (net.k8s-api's question), never PASS
"""
import hashlib
import os
import unittest

import e2e_util as u
from test_kubernetes import (DENY, GVISOR, NS, FakeRun, copy_manifest,  # noqa: F401
                             write_kube_manifest, FAST)

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ROW = "cred.sa-token-power"
HARDENED = ("k8s-deny-egress", "k8s-gvisor")


def token_template(account=None):
    spec = "automountServiceAccountToken: true"
    if account:
        spec += ", serviceAccountName: %s" % account
    return "jobTemplate: {spec: {template: {spec: {%s}}}}" % spec


class TokenPower(FakeRun):
    FAKE_ARGS = ("--network-policy", "enforce")

    @classmethod
    def run_args(cls):
        f = cls.fake
        for path, body in (
                ("%s/namespaces/%s/roles" % (RBAC, NS), {
                    "metadata": {"name": "secret-reader"},
                    "rules": [{"apiGroups": [""], "resources": ["secrets"],
                               "verbs": ["get", "list"]}]}),
                ("%s/namespaces/%s/rolebindings" % (RBAC, NS), {
                    "metadata": {"name": "secret-reader"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                "name": "secret-reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": "secret-reader",
                                  "namespace": NS}]}),
                ("%s/clusterrolebindings" % RBAC, {
                    "metadata": {"name": "editor-edit"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "edit"},
                    "subjects": [{"kind": "ServiceAccount", "name": "editor",
                                  "namespace": NS}]})):
            status, obj = f.request("POST", path, body)
            assert status == 201, (path, status, obj)
        d = cls.tmp.name
        ctl = write_kube_manifest(os.path.join(d, "open.yaml"), "k8s-open")
        deny = copy_manifest(DENY, os.path.join(d, "deny-egress.yaml"), control=ctl,
                             drop=("minPolicyAge",), add=["minPolicyAge: 1s"])
        gvisor = copy_manifest(GVISOR, os.path.join(d, "gvisor.yaml"), control=ctl)
        arms = [deny, gvisor]
        for name, account, policy in (("k8s-token-default", None, False),
                                      ("k8s-token-secrets", "secret-reader", False),
                                      ("k8s-token-edit", "editor", False),
                                      ("k8s-token-denied", "editor", True)):
            arms.append(write_kube_manifest(os.path.join(d, name + ".yaml"), name, control=ctl,
                                            policy=policy, extra=[token_template(account)]))
        suite = u.write_suite(d, "token", [ROW, "cred.sa-token"],
                              params={ROW: {}, "cred.sa-token": {}})
        args = ["--suite", suite]
        for arm in arms:
            args += ["--sandbox", arm]
        return args + FAST

    def result(self, arm):
        return self.cell(arm, ROW)["evidence"]["result"]

    def test_exit_1_and_the_columns(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        self.assertEqual(u.arm_names(self.report, "control"), ["k8s-open"])

    def test_hardened_arms_mount_no_token_and_pass(self):
        for arm in HARDENED:
            v = self.verdict(arm, ROW)
            self.assertEqual(v["verdict"], "PASS", (arm, v))
            self.assertIn("probe needs no control", v["reason"])
            cell = self.cell(arm, ROW)
            self.assertEqual((cell["label"], cell["evidence"]["result"]["errno"]),
                             ("no token", "ENOENT"), arm)

    def test_default_account_token_is_readable_but_has_only_the_default_rules(self):
        v = self.verdict("k8s-token-default", ROW)
        self.assertEqual(v["verdict"], "PASS", v)
        self.assertIn("positive evidence", v["reason"])
        r = self.result("k8s-token-default")
        self.assertEqual((r["outcome"], r["namespace"], r["beyond_defaults"], r["allowed_checks"]),
                         ("defaults_only", NS, [], []))
        self.assertEqual(len(r["checks"]), 6)
        # The token itself is a finding of its own row.
        self.assertEqual(self.verdict("k8s-token-default", "cred.sa-token")["verdict"], "FAIL")

    def test_role_binding_to_read_secrets_fails_and_names_them(self):
        v = self.verdict("k8s-token-secrets", ROW)
        self.assertEqual(v["verdict"], "FAIL", v)
        self.assertEqual(self.cell("k8s-token-secrets", ROW)["label"], "BEYOND DEFAULTS")
        self.assertIn("token can get secrets, list secrets in sandprobe; rules beyond the "
                      "defaults: get,list secrets", v["reason"])
        r = self.result("k8s-token-secrets")
        self.assertEqual(r["allowed_checks"], ["get secrets", "list secrets"])
        self.assertEqual({c["reason"] for c in r["checks"] if c["allowed"]},
                         {'RBAC: allowed by RoleBinding "secret-reader/sandprobe" of Role '
                          '"secret-reader" to ServiceAccount "secret-reader/sandprobe"'})
        # The reviewed token is that account's (sha256 prefix only; the value never printed).
        fp = self.fake.state()["serviceAccountTokens"]["%s/secret-reader" % NS]
        self.assertEqual(r["files"][0]["sha256_prefix"], fp["sha256"][:12])
        self.assertEqual(r["files"][0]["length"], fp["length"])

    def test_cluster_role_binding_to_edit_fails_naming_pods_and_exec(self):
        v = self.verdict("k8s-token-edit", ROW)
        self.assertEqual(v["verdict"], "FAIL", v)
        r = self.result("k8s-token-edit")
        self.assertEqual(r["allowed_checks"], ["create pods", "get secrets", "list secrets",
                                               "create pods/exec",
                                               "list secrets in all namespaces"])
        self.assertIn("create pods/exec", v["reason"])

    def test_a_token_whose_api_is_unreachable_is_inconclusive(self):
        v = self.verdict("k8s-token-denied", ROW)
        self.assertEqual(v["verdict"], "INCONCLUSIVE", v)
        self.assertIn("no answer from the API server", v["reason"])
        self.assertEqual(self.cell("k8s-token-denied", "cred.sa-token")["exposure"], "exposed")

    def test_the_reviews_reached_the_api_server_from_the_pods(self):
        reviews = [r for r in self.fake.requests()
                   if r["path"].startswith("/apis/authorization.k8s.io/v1/selfsubject")]
        self.assertEqual({r["listener"] for r in reviews}, {"pod network"})
        # default, secrets, edit: one rules review and six access reviews each.
        self.assertEqual(len(reviews), 3 * 7, reviews)
        self.assertEqual({r["status"] for r in reviews}, {201})

    def test_no_token_in_any_report_and_nothing_left(self):
        tokens = []
        for account in ("default", "secret-reader", "editor"):
            status, body = self.fake.request("POST", "/fake/token", {
                "namespace": NS, "serviceAccount": account}, auth=False)
            self.assertEqual(status, 200, body)
            tokens.append(body["token"])
        for name in os.listdir(self.out):
            with open(os.path.join(self.out, name), "rb") as f:
                data = f.read()
            for token in tokens:
                self.assertNotIn(token.encode(), data, name)
                self.assertNotIn(hashlib.sha256(token.encode()).hexdigest().encode(), data, name)
        for token in tokens:
            self.assertNotIn(token, self.res.stdout + self.res.stderr)
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
