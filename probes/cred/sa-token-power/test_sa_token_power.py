"""cred.sa-token-power against the FAKE API server (harness/testing/fake_kube, 127.0.0.1 only):
the reviews it answers for each token are the table below (--reviews), written in the shapes and
words a v1.3x API server with RBAC uses (the bootstrap roles of every service account; the
`edit` ClusterRole abbreviated to its core). What this checks is that the probe reads such answers
right; what real RBAC answers is the real cluster's test. The tokens are this test's own; never
printed."""
import json
import os
import secrets
import shutil
import socket
import sys
import tempfile
import unittest

from probe_testing import PROBES, TEST_KEY_AND_CERT, run_probe

sys.path.insert(0, os.path.join(os.path.dirname(PROBES), "harness", "testing", "fake_kube"))
from test_fake_kube import FakeKube  # noqa: E402

NS = "sandprobe"
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]


def rule(verbs, groups, resources):
    return {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}


# What system:basic-user, system:discovery, system:public-info-viewer and
# system:service-account-issuer-discovery give every service account.
DEFAULT_RULES = {
    "resourceRules": [
        rule(["create"], ["authorization.k8s.io"],
             ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
        rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"])],
    "nonResourceRules": [
        {"verbs": ["get"], "nonResourceURLs": [
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
            "/openapi/*", "/readyz", "/version", "/version/"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version",
                                               "/version/"]},
        {"verbs": ["get"], "nonResourceURLs": [
            "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
            "/openid/v1/jwks", "/openid/v1/jwks/"]}],
    "incomplete": False}
EDIT_RULES = [
    rule(READ, [""], ["configmaps", "endpoints", "persistentvolumeclaims", "pods",
                      "replicationcontrollers", "services", "serviceaccounts", "events",
                      "limitranges", "resourcequotas", "pods/log", "pods/status"]),
    rule(READ + WRITE, [""], ["secrets"]),
    rule(WRITE, [""], ["configmaps", "endpoints", "persistentvolumeclaims", "pods",
                       "replicationcontrollers", "services"]),
    rule(["create"], [""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
                            "serviceaccounts/token"]),
    rule(WRITE, ["batch"], ["cronjobs", "jobs"])]
READER = 'RBAC: allowed by RoleBinding "reader-reads-secrets/sandprobe" of Role "secret-reader" ' \
    'to ServiceAccount "reader/sandprobe"'
EDITOR = 'RBAC: allowed by ClusterRoleBinding "editor-edits" of ClusterRole "edit" to ' \
    'ServiceAccount "editor/sandprobe"'


def allowed(reason, verb, resource, subresource="", namespace=NS):
    return {"resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource,
                                   "subresource": subresource},
            "status": {"allowed": True, "reason": reason}}


def with_rules(*extra):
    rules = json.loads(json.dumps(DEFAULT_RULES))
    rules["resourceRules"] += list(extra)
    return rules


class SaTokenPowerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="sa-token-power-")
        cls.tokens = {a: secrets.token_urlsafe(40) for a in ("default", "reader", "editor")}
        table = {
            cls.tokens["default"]: {"user": f"system:serviceaccount:{NS}:default",
                                    "rules": DEFAULT_RULES},
            cls.tokens["reader"]: {
                "user": f"system:serviceaccount:{NS}:reader",
                "rules": with_rules(rule(["get", "list"], [""], ["secrets"])),
                "access": [allowed(READER, "get", "secrets"), allowed(READER, "list", "secrets")]},
            cls.tokens["editor"]: {
                "user": f"system:serviceaccount:{NS}:editor", "rules": with_rules(*EDIT_RULES),
                "access": [allowed(EDITOR, "create", "pods"), allowed(EDITOR, "get", "secrets"),
                           allowed(EDITOR, "list", "secrets"),
                           allowed(EDITOR, "create", "pods", "exec"),
                           allowed(EDITOR, "list", "secrets", namespace="")]}}
        path = os.path.join(cls.tmp.name, "reviews.json")
        with open(path, "w") as f:
            json.dump(table, f)
        cls.kube = FakeKube("--reviews", path)

    @classmethod
    def tearDownClass(cls):
        cls.kube.proc.terminate()
        cls.kube.proc.communicate(timeout=30)
        cls.kube.dir.cleanup()
        cls.tmp.cleanup()

    def mount(self, account, token=None, ca=None):
        """A service-account directory as the kubelet mounts it: token, ca.crt, namespace."""
        d = tempfile.mkdtemp(dir=self.tmp.name)
        with open(os.path.join(d, "token"), "w") as f:
            f.write(token or self.tokens[account])
        if ca is None:
            shutil.copy(os.path.join(self.kube.dir.name, "ca.crt"), os.path.join(d, "ca.crt"))
        else:
            with open(os.path.join(d, "ca.crt"), "w") as f:
                f.write(ca)
        with open(os.path.join(d, "namespace"), "w") as f:
            f.write(NS)
        return os.path.join(d, "token")

    def probe(self, token_path, **params):
        params.setdefault("target", f"127.0.0.1:{self.kube.port}")
        run = run_probe("cred.sa-token-power", dict(paths=[token_path], **params))
        for secret in self.tokens.values():
            self.assertNotIn(secret, run.stdout + run.stderr)
        return run.result

    def test_default_account_has_only_the_default_rules(self):
        r = self.probe(self.mount("default"))
        self.assertEqual((r["outcome"], r["evidence"]), ("defaults_only", "positive"), r)
        self.assertIn("create selfsubjectaccessreviews.authorization.k8s.io,"
                      "selfsubjectrulesreviews.authorization.k8s.io", r["rules"])
        self.assertIn("get /api,/api/*,/apis,/apis/*,/healthz,/livez,/openapi,/openapi/*,"
                      "/readyz,/version,/version/", r["rules"])
        self.assertEqual((r["beyond_defaults"], r["allowed_checks"]), ([], []))
        self.assertEqual([c["allowed"] for c in r["checks"]], [False] * 6)
        self.assertEqual(r["namespace"], NS)

    def test_role_binding_to_read_secrets_is_named(self):
        r = self.probe(self.mount("reader"))
        self.assertEqual((r["outcome"], r["evidence"]), ("beyond_defaults", "positive"), r)
        self.assertEqual(r["beyond_defaults"], ["get,list secrets"])
        self.assertEqual(r["allowed_checks"], ["get secrets", "list secrets"])
        self.assertEqual(r["detail"], "token can get secrets, list secrets in sandprobe; rules "
                         "beyond the defaults: get,list secrets")
        reasons = {c["check"]: c["reason"] for c in r["checks"]}
        self.assertEqual(reasons["list secrets"], 'RBAC: allowed by RoleBinding "reader-reads-'
                         'secrets/sandprobe" of Role "secret-reader" to ServiceAccount '
                         '"reader/sandprobe"')

    def test_cluster_role_binding_to_edit_allows_pods_exec_and_secrets_everywhere(self):
        r = self.probe(self.mount("editor"))
        self.assertEqual(r["outcome"], "beyond_defaults", r)
        self.assertEqual(r["allowed_checks"], ["create pods", "get secrets", "list secrets",
                                               "create pods/exec",
                                               "list secrets in all namespaces"])
        self.assertIn("create pods/attach,pods/exec,pods/portforward,pods/proxy,"
                      "serviceaccounts/token", r["beyond_defaults"])
        self.assertTrue(r["detail"].startswith(
            "token can create pods, get secrets, list secrets, create pods/exec in sandprobe; "
            "list secrets in all namespaces; rules beyond the defaults: get,list,watch "), r)

    def test_no_token_is_positive_containment(self):
        r = self.probe(os.path.join(self.tmp.name, "absent", "token"))
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("no_token", "positive", "ENOENT"))

    def test_a_token_the_api_rejects_has_no_power(self):
        r = self.probe(self.mount("default", token="not-a-token-of-this-cluster"))
        self.assertEqual((r["outcome"], r["evidence"], r["rules_review_status"]),
                         ("rejected", "positive", 401))

    def test_a_server_the_ca_does_not_verify_never_gets_the_token(self):
        before = len(self.kube.ok("GET", "/fake/requests")["requests"])
        cert = TEST_KEY_AND_CERT[TEST_KEY_AND_CERT.index("-----BEGIN CERTIFICATE"):]
        r = self.probe(self.mount("reader", ca=cert))
        self.assertEqual(r["outcome"], "unverified", r)
        self.assertIn("the token was not sent", r["detail"])
        after = self.kube.ok("GET", "/fake/requests")["requests"][before:]
        self.assertEqual([q for q in after if "authorization.k8s.io" in q["path"]], [])

    def test_an_api_that_does_not_answer_is_unknown(self):
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        r = self.probe(self.mount("reader"), target=f"127.0.0.1:{port}")
        self.assertEqual((r["outcome"], r["evidence"]), ("unreachable", "absence"), r)

    def test_no_api_address_is_unknown(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        run = run_probe("cred.sa-token-power", {"paths": [self.mount("reader")], "target": ""},
                        env=env)
        self.assertEqual(run.result["outcome"], "no_api")


if __name__ == "__main__":
    unittest.main()
