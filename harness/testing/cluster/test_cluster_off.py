"""Real cluster, NetworkPolicy off (ci/cluster/up --network-policy off: every component but
kube-router, which is what k3s's --disable-network-policy leaves out). The ticket's question
asked of a real cluster: suites/kubernetes-egress.yaml against manifests/kubernetes/deny-egress.yaml
(image and runtimeClassName set for this cluster, nothing else) must show the policy accepted by
the API server and never enforced.

The shipped suite aims net.metadata at 169.254.169.254:80; here that one target is replaced by
the run's in-cluster canary (traffic rule: nothing in a test aims outside the cluster's
namespace). EgressWatch proves no packet of the cluster reached the host's default route. ctest runs this
module under without_run_netns (a machine with no /run/netns yet): up and down must work there.
The cluster is dual-stack (--ip-family dual): the dual-stack rows (test_cluster_dual) run once
more with an IPv6 arm, which reaches on every row as the IPv4 one does.
"""
import json
import os
import sys
import tempfile
import time
import unittest

import cluster_util as c
from cluster_util import u
import policy_fields as pf
import test_cluster_dual as dual
import test_cluster_live as live
import real_manifests as rm


class K3sQuestion(u.ReportReading, unittest.TestCase):
    ARMS = ("k8s-open", "k8s-deny-egress", "k8s-deny-egress-aged")

    @classmethod
    def setUpClass(cls):
        u.require_sandprobe()
        cls.tmp = tempfile.TemporaryDirectory(prefix="sandprobe-cluster-off-")
        cls.run_netns_before = os.path.exists("/run/netns")
        cls.cluster = c.Cluster("--network-policy", "off", "--ip-family", "dual").start()
        try:
            d = cls.tmp.name
            cls.watch = c.EgressWatch(os.path.join(d, "egress.pcap"))
            args = rm.shipped_egress_run(d, deny_add=["minPolicyAge: 5s", "agedRerun: 10s"])
            cls.out = os.path.join(d, "out")
            t0 = time.monotonic()
            cls.res = u.run_sandprobe(
                ["run", "--out", cls.out, "--canary-dir", os.path.join(d, "canary"),
                 "--no-color"] + args, timeout=600, env=cls.cluster.env())
            cls.wall = time.monotonic() - t0
            cls.report = u.report_or_none(cls.out)
            cls.left = (cls.cluster.wait_objects_gone(cls.report["run_id"])
                        if cls.report else None)
            cls.policy_stored = cls.cluster.get("-n", c.NS, "networkpolicies")["items"]
            cls.fields = cls.fields_run(os.path.join(d, "fields"))
            cls.live = cls.live_run(os.path.join(d, "live"))
            cls.dual = cls.dual_run(os.path.join(d, "dual"))
            cls.packets = cls.watch.count()
        except BaseException:
            cls.cluster.stop()
            cls.tmp.cleanup()
            raise
        cls.down_rc, cls.down_err = cls.cluster.stop()
        cls.run_netns_after = os.path.exists("/run/netns")
        cls.tmp.cleanup()

    @classmethod
    def run_in(cls, d, args):
        """`sandprobe run` with `args`, its output and canary folder in `d`: (result, report,
        objects of the run left on the cluster)."""
        res = u.run_sandprobe(["run", "--out", os.path.join(d, "out"), "--canary-dir",
                               os.path.join(d, "canary"), "--no-color"] + args,
                              timeout=600, env=cls.cluster.env())
        report = u.report_or_none(os.path.join(d, "out"))
        return res, report, cls.cluster.wait_objects_gone(report["run_id"]) if report else None

    @classmethod
    def fields_run(cls, d):
        """The policy-fields table (policy_fields.py) on this cluster."""
        os.mkdir(d)
        cleanups = []
        try:
            return cls.run_in(d, pf.run_args(d, cls.cluster,
                                              lambda *a, **k: cleanups.append((a, k)),
                                              extra=["minPolicyAge: 5s", "settledRerun: 6s"]))
        finally:
            for (fn, *a), k in reversed(cleanups):
                fn(*a, **k)

    @classmethod
    def live_run(cls, d):
        """net.live-change with a label added 3 s in (test_cluster_live)."""
        os.mkdir(d)
        return cls.run_in(d, ["--suite", live.live_suite(d), "--sandbox", live.write_arms(d)] +
                          rm.FAST)

    @classmethod
    def dual_run(cls, d):
        """test_cluster_dual's rows with the IPv6 arm only (the main run is the IPv4 one)."""
        os.mkdir(d)
        return cls.run_in(d, dual.run_args(d, v4=None, add=["minPolicyAge: 5s"]))

    def test_exit_1_three_columns_and_the_matrix(self):
        self.assertEqual(self.res.returncode, 1, self.res.describe())
        self.assertEqual([a["name"] for a in self.report["arms"]], list(self.ARMS))
        print("\n[cluster off] %s, run %.0f s, cluster up %.0f s\n%s" % (
            self.cluster.server_version, self.wall, self.cluster.up_s, self.res.stdout),
            file=sys.stderr)

    def test_every_traffic_row_reached_in_all_three_columns(self):
        for arm in self.ARMS:
            for probe in rm.TRAFFIC_ROWS:
                o = self.cell(arm, probe)
                self.assertEqual((o["exposure"], o["label"]), ("exposed", "REACHED"),
                                 (arm, probe, o["reason"]))
        for arm in self.ARMS:  # the in-cluster canary logged it (pods/log): server-side proof
            for probe in ("net.dns", "net.http-by-name", "net.tcp-by-ip", "net.udp"):
                hits = self.cell(arm, probe)["evidence"]["canary_hits"]
                self.assertTrue(hits, (arm, probe))
                self.assertRegex(hits[0]["peer"], r"^10\.252\.0\.\d+:\d+$")  # a pod address
        for cand in self.ARMS[1:]:
            for probe in rm.TRAFFIC_ROWS:
                self.assertEqual(self.verdict(cand, probe)["verdict"], "FAIL", (cand, probe))

    def test_held_open_flows_open_in_all_three_columns(self):
        # Nothing holds: new connections never fail, the nonce goes over the old flows at the end
        # of the window and the canary logs it (kinds tcp-held and udp-held).
        for arm in self.ARMS:
            o = self.cell(arm, rm.HELD_OPEN)
            r = o["evidence"]["result"] or {}
            kinds = {h["kind"] for h in o["evidence"]["canary_hits"]}
            self.assertEqual((o["exposure"], r.get("outcome")), ("exposed", "open"),
                             (arm, o["reason"]))
            self.assertLessEqual({"tcp-held", "udp-held"}, kinds, (arm, kinds))
            self.assertGreater(r["new_connections"], 3, arm)
        for cand in self.ARMS[1:]:
            self.assertEqual(self.verdict(cand, rm.HELD_OPEN)["verdict"], "FAIL", cand)

    def test_node_local_reached_in_all_three_columns(self):
        # No policy is enforced: the API server and the kubelet answer on the node's address.
        node_ip = c.lib_value("NODE_IP")
        for arm in self.ARMS:
            o = self.cell(arm, rm.NODE_LOCAL)
            answered = sorted("%s %s:%d" % (p["name"], p["address"], p["port"])
                              for p in o["evidence"]["result"]["pairs"] if p["answered"])
            self.assertEqual(answered, ["api-server %s:6443" % node_ip,
                                        "kubelet %s:10250" % node_ip], (arm, o["reason"]))
            self.assertEqual(o["exposure"], "exposed", arm)
            self.assertIn("%s api-server:6443 (HTTP" % node_ip, o["reason"])

    def test_every_policy_field_ignored_in_every_column(self):
        # Nothing enforces the allow-list: each judged row's outside pair answers in the fresh
        # and the settled pod alike (FAIL, and no "late" banner: the settled pod leaked too);
        # the SCTP row stays not testable.
        res, report, left = self.fields
        self.assertEqual((res.returncode, left), (1, []), res.describe())
        for arm in ("k8s-open", "k8s-fields", "k8s-fields-settled"):
            cells = u.observations(report, arm)
            for probe in pf.JUDGED:
                o = cells[probe]
                self.assertEqual((o["exposure"], o["label"]), ("exposed", "IGNORED"),
                                 (arm, probe, o["reason"]))
            self.assertEqual(cells["net.policy-sctp"]["label"], "not testable", arm)
        for arm in ("k8s-fields", "k8s-fields-settled"):
            verdicts = u.verdicts(report, arm)
            self.assertEqual({p: verdicts[p]["verdict"] for p in pf.JUDGED},
                             dict.fromkeys(pf.JUDGED, "FAIL"), arm)
        self.assertFalse([b for b in report["banners"] if b.startswith(rm.LATE)],
                         report["banners"])

    def test_a_label_change_changes_nothing(self):
        # Nothing enforces the policy: the candidate reaches after its label came (FAIL), the
        # control after its label went, as before.
        res, report, left = self.live
        self.assertEqual((res.returncode, left), (1, []), res.describe())
        for arm in ("k8s-live-add", "k8s-live-remove"):
            o = u.observations(report, arm)["net.live-change"]
            self.assertEqual((o["exposure"], o["label"]), ("exposed", "REACHED AFTER CHANGE"),
                             (arm, o["reason"]))
        self.assertEqual(u.verdicts(report, "k8s-live-add")["net.live-change"]["verdict"], "FAIL")

    def test_ipv6_reached_on_every_row_and_the_banner_names_the_family(self):
        res, report, left = self.dual
        self.assertEqual((res.returncode, left), (1, []), res.describe())
        print("\n[cluster off, IPv6]\n%s" % res.stdout, file=sys.stderr)
        arm = dual.V6
        cells = u.observations(report, arm)
        for probe in dual.ROWS:
            o = cells[probe]
            self.assertEqual(o["exposure"], "exposed", (probe, o["reason"]))
            self.assertEqual(u.verdicts(report, arm)[probe]["verdict"], "FAIL", probe)
            for h in o["evidence"]["canary_hits"]:  # the canary saw the pod's IPv6 address
                self.assertTrue(h["peer"].startswith(dual.POD6), (probe, h))
        self.assertTrue(all(cells[p]["evidence"]["canary_hits"] for p in dual.CANARY_ROWS))
        pairs = cells[rm.NODE_LOCAL]["evidence"]["result"]["pairs"]
        self.assertEqual(sorted("%s %s:%d" % (p["name"], p["address"], p["port"])
                                for p in pairs if p["answered"]),
                         ["api-server fd00:251::2:6443", "kubelet fd00:251::2:10250"])
        self.assertEqual(len(report["banners"]), 1, report["banners"])
        self.assertTrue(report["banners"][0].startswith(rm.BANNER), report["banners"])
        self.assertIn("%s (IPv6) (policy" % arm, report["banners"][0])
        self.assertEqual([a.get("ip_family", "") for a in report["arms"]], ["", "IPv6"])
        # The control ran every row in IPv6 too (its twin cells carry the family), and the
        # report with the family in it still has the published shape.
        twins = [o for o in report["observations"]
                 if o["arm"] == "k8s-open" and o["params"].get("ip_family") == "IPv6"]
        self.assertEqual(sorted(o["probe"] for o in twins), sorted(dual.ROWS))
        node = next(o for o in twins if o["probe"] == rm.NODE_LOCAL)
        self.assertEqual(node["evidence"]["result"]["addresses"], ["fd00:251::2"])
        import jsonschema
        with open(os.path.join(u.HOME, "reports", "schema", "report.schema.json")) as f:
            jsonschema.Draft202012Validator(json.load(f)).validate(report)

    def test_banner_accepted_but_not_enforced(self):
        banners = self.report["banners"]
        self.assertEqual(len(banners), 1, banners)
        self.assertTrue(banners[0].startswith(rm.BANNER), banners)
        self.assertIn("k8s-deny-egress (policy", banners[0])
        self.assertIn("k8s-deny-egress-aged (policy", banners[0])
        self.assertNotIn("net.interfaces", banners[0])
        self.assertIn(rm.BANNER, self.res.stdout)

    def test_ruled_out_shows_server_version_policy_selector_and_no_controller(self):
        note = self.note("k8s-deny-egress: ruled out before concluding")
        self.assertIn("server %s" % self.cluster.server_version, note)
        self.assertEqual(self.cluster.server_version, "v1.34.4")
        self.assertIn("deny all egress", note)
        self.assertIn("sandprobe.io/arm=k8s-deny-egress", note)
        self.assertIn("are selected by its podSelector", note)
        self.assertIn("networking.k8s.io/v1 networkpolicies served", note)
        # No policy controller was found: no CNI or controller hint on the nodes or DaemonSets.
        self.assertIn("no CNI hint in what was readable", note)

    def test_runtime_class_row_refused_by_the_admission_policy(self):
        for cand in self.ARMS[1:]:
            v = self.verdict(cand, "platform.runtime-class")
            self.assertEqual(v["verdict"], "PASS", v)
            detail = str(self.cell(cand, "platform.runtime-class")["evidence"])
            self.assertIn("sandprobe-require-runtime-class", detail)

    @unittest.skipUnless(os.environ.get("SANDPROBE_NO_RUN_NETNS") == "1",
                         "run by ctest under harness/testing/cluster/without_run_netns")
    def test_up_and_down_on_a_machine_without_run_netns(self):
        # ctest runs this module under without_run_netns: a view of the machine with no
        # /run/netns, as a new machine has before anything made a network namespace (up once
        # failed there with no word of why). up made it; down removed it again.
        self.assertFalse(self.run_netns_before, "without_run_netns left a /run/netns")
        self.assertEqual(self.down_rc, 0, self.down_err)
        self.assertIn("removed /run/netns (up found none)", self.down_err)
        self.assertFalse(self.run_netns_after, "/run/netns left by up and down")

    def test_nothing_left_in_the_cluster_or_on_the_machine(self):
        self.assertEqual(self.left, [])
        self.assertEqual([p["metadata"]["name"] for p in self.policy_stored], [])
        self.assertEqual(self.down_rc, 0, self.down_err)
        self.assertEqual(self.packets, 0, self.watch.lines[:20])


if __name__ == "__main__":
    unittest.main()
