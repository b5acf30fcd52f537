"""net.held-open against the in-cluster canary's own handlers (cluster_canary.py, run in this
process on loopback): a flow opened first, new connections then refused (the listener closed, as
a policy that now holds refuses them), the nonce over the old flows. Kept flows are exposed, cut
ones contained, a canary that never stops accepting is "open", one refused from the start is
"never_opened"."""
import socket
import threading
import unittest

from probe_testing import CLUSTER_CANARY, ProbeTestCase, new_ids, run_probe


class HeldCanary:
    """CLUSTER_CANARY's TCP and UDP handlers on 127.0.0.1, its hit() recorded in `hits` as
    (kind, invocation). After the first TCP connection is answered the listener closes when
    `refuse_after_first`, and (`hold_udp`) datagrams of UDP peers not seen before are dropped;
    with `cut` the old flows die with it (the TCP flow shut, later
    datagrams dropped before the canary sees them), as a policy that also stops known flows
    would."""

    def __init__(self, nonce, refuse_after_first=True, cut=False, hold_udp=True):
        CLUSTER_CANARY.NONCE = nonce
        self.hits, self.conns, self.cut, self.dropping = [], [], cut, False
        self.holding, self.peers, self.hold_udp = False, set(), hold_udp
        CLUSTER_CANARY.hit = lambda kind, inv, peer, detail: self.hits.append((kind, inv))
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.target = "127.0.0.1:%d" % self.tcp.getsockname()[1]
        self.udp_target = "127.0.0.1:%d" % self.udp.getsockname()[1]
        self.refuse_after_first = refuse_after_first
        threading.Thread(target=self.accept, daemon=True).start()
        threading.Thread(target=self.serve_udp, daemon=True).start()

    def serve_udp(self):
        try:
            CLUSTER_CANARY.serve_udp(self)  # through recvfrom() below: what a cut flow drops
        except OSError:
            pass  # closed

    def recvfrom(self, size):
        while True:
            data, peer = self.udp.recvfrom(size)
            # Once held, a new peer's datagrams are dropped (a new flow); with `cut`, every one.
            if self.dropping or (self.hold_udp and self.holding and peer not in self.peers):
                continue
            self.peers.add(peer)
            return data, peer

    def sendto(self, data, peer):
        return self.udp.sendto(data, peer)

    def accept(self):
        first = True
        while True:
            try:
                conn, peer = self.tcp.accept()
            except OSError:
                return
            self.conns.append(conn)
            if first and self.refuse_after_first:
                threading.Thread(target=self.first, args=(conn, peer), daemon=True).start()
                first = False
            else:
                threading.Thread(target=CLUSTER_CANARY.tcp_handler, args=(conn, peer),
                                 daemon=True).start()

    def first(self, conn, peer):
        threading.Timer(0.1, self.hold).start()
        CLUSTER_CANARY.tcp_handler(conn, peer)

    def hold(self):
        self.holding = True
        self.tcp.close()
        if self.cut:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.dropping = True

    def close(self):
        for s in [self.tcp, self.udp] + self.conns:
            s.close()


class HeldOpenProbeTest(ProbeTestCase):
    def run_against(self, **canary_args):
        ids = new_ids()
        c = HeldCanary(ids[0], **canary_args)
        self.addCleanup(c.close)
        run = run_probe("net.held-open", {"tcp_target": c.target, "udp_target": c.udp_target,
                                          "hold_s": 3, "poll_s": 0.2, "timeout_s": 1}, ids=ids)
        return run.result, [(kind, inv == ids[1]) for kind, inv in c.hits]

    def test_old_flows_kept_after_new_connections_are_refused(self):
        r, hits = self.run_against()
        self.assertEqual((r["outcome"], r["evidence"]), ("kept", "positive"), r)
        self.assertEqual(r["held_by"], {"tcp": {"outcome": "blocked", "errno": "ECONNREFUSED"}})
        self.assertEqual({k: v["echoed"] for k, v in r["late"].items()},
                         {"tcp": True, "udp": True})
        self.assertLess(max(r["held_after_s"].values()), 2.5)
        self.assertIn(("tcp-held", True), hits)  # the canary's log: what the harness judges
        self.assertIn(("udp-held", True), hits)

    def test_old_flows_cut_with_the_new_ones(self):
        r, hits = self.run_against(cut=True)
        self.assertEqual((r["outcome"], r["evidence"]), ("cut", "absence"), r)
        self.assertEqual({k: v["echoed"] for k, v in r["late"].items()},
                         {"tcp": False, "udp": False})
        self.assertEqual([k for k, _ in hits if k.endswith("-held")], [])

    def test_new_connections_never_refused_is_open(self):
        r, hits = self.run_against(refuse_after_first=False)
        self.assertEqual((r["outcome"], r["evidence"], r["held_after_s"]),
                         ("open", "positive", {"tcp": None, "udp": None}), r)
        self.assertGreaterEqual(r["new_connections"], 5)
        self.assertIn(("tcp-held", True), hits)

    def test_udp_left_open_is_open_not_kept(self):
        # New TCP refused, new UDP flows still answered: a plain UDP leak, not connection
        # tracking keeping an old flow.
        ids = new_ids()
        c = HeldCanary(ids[0], hold_udp=False)  # new UDP flows still pass after the hold
        self.addCleanup(c.close)
        r = run_probe("net.held-open", {"tcp_target": c.target, "udp_target": c.udp_target,
                                        "hold_s": 3, "poll_s": 0.2, "timeout_s": 1},
                      ids=ids).result
        self.assertEqual(r["outcome"], "open", r)
        self.assertEqual(r["held_after_s"]["udp"], None)
        self.assertIsNotNone(r["held_after_s"]["tcp"])
        self.assertIn("new udp flows still opened", r["detail"])

    def test_a_window_too_short_to_try_is_an_error(self):
        ids = new_ids()
        c = HeldCanary(ids[0], refuse_after_first=False)
        self.addCleanup(c.close)
        r = run_probe("net.held-open", {"tcp_target": c.target, "udp_target": "",
                                        "hold_s": 0.1, "poll_s": 0.5}, ids=ids).result
        self.assertEqual((r["outcome"], r["new_connections"]), ("error", 0), r)

    def test_refused_from_the_first_instant_is_never_opened(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # bound, never listening: refused
            r = run_probe("net.held-open", {"tcp_target": "127.0.0.1:%d" % port,
                                            "udp_target": "127.0.0.1:%d" % port,
                                            "timeout_s": 1}).result
        self.assertEqual((r["outcome"], r["evidence"], r["errno"]),
                         ("never_opened", "positive", "ECONNREFUSED"), r)

    def test_no_target_sends_nothing(self):
        r = run_probe("net.held-open", {"tcp_target": ""}).result
        self.assertEqual((r["outcome"], r["errno"]), ("error", "EINVAL"))


if __name__ == "__main__":
    unittest.main()
