"""net.sibling as the runner deploys it: calls 1 and 2 at the same moment, then closing call 3
with both results. Processes sharing a network namespace reach each other on loopback; in a
namespace the test made, the connector finds its partner on its own subnet when `allow` admits
it and tries nothing outside its own subnets; a network namespace each (bubblewrap) reaches
nothing; calls that never overlap are not judged."""
import subprocess
import time
import unittest

from lab_netns import LabNetns
from probe_testing import PYTHON, Run, assemble, new_ids, probe_dir

PAIR = {"overlap_s": 1.5}


class SiblingNetProbeTest(unittest.TestCase):
    def start(self, call, other, nonce, inv, wrap=(), **params):
        script = assemble(probe_dir("net.sibling"),
                          dict(PAIR, call=call, concurrent_with=other, previous=[], **params),
                          nonce, inv)
        return subprocess.Popen(list(wrap) + [PYTHON, "-u", "-c", script],
                                stdout=subprocess.PIPE, text=True)

    def finish(self, proc, nonce, inv):
        out, _ = proc.communicate(timeout=30)
        r = Run(nonce, inv, out, "", proc.returncode).result
        self.assertIsNotNone(r)
        return r

    def pair(self, wrap=(), **params):
        nonce, inv = new_ids()
        procs = [self.start(1, 2, nonce, inv, wrap, **params),
                 self.start(2, 1, nonce, inv, wrap, **params)]
        pair = [self.finish(p, nonce, inv) for p in procs]
        return pair, self.close(pair, nonce, inv)

    def close(self, pair, nonce, inv):
        script = assemble(probe_dir("net.sibling"), dict(PAIR, call=3, previous=pair), nonce, inv)
        out = subprocess.run([PYTHON, "-u", "-c", script], capture_output=True, text=True,
                             timeout=30)
        return Run(nonce, inv, out.stdout, out.stderr, out.returncode).result

    def test_one_network_namespace_reaches_the_other_call_on_loopback(self):
        pair, last = self.pair()
        self.assertEqual([r["reached"] for r in pair], ["127.0.0.1", "127.0.0.1"])
        self.assertEqual([r["heard_from"] for r in pair], ["127.0.0.1", "127.0.0.1"])
        self.assertEqual((last["outcome"], last["evidence"]), ("sibling_reached", "positive"))
        self.assertIn("call 1 reached call 2 at 127.0.0.1", last["detail"])

    def test_the_partner_is_found_on_the_own_subnet_that_allow_admits(self):
        with LabNetns() as ns:
            pair, last = self.pair(ns.prefix, allow=["10.253.0.0/24"])
        self.assertEqual([r["subnets"] for r in pair], [["10.253.0.0/24"]] * 2)
        self.assertEqual([r["candidates"] for r in pair], [254, 254])  # never 127.0.0.1
        self.assertEqual(last["outcome"], "sibling_reached", last)
        self.assertIn("at 10.253.0.", last["detail"])

    def test_nothing_outside_the_own_subnets_is_tried(self):
        with LabNetns() as ns:
            pair, last = self.pair(ns.prefix, allow=["10.0.0.0/8", "192.168.0.0/16"])
        self.assertEqual([(r["subnets"], r["candidates"]) for r in pair],
                         [(["10.253.0.0/24"], 254)] * 2)  # /8 allowed, own /24 tried
        pair, last = self.pair(allow=["192.168.0.0/16"])  # not even loopback
        self.assertEqual([r["candidates"] for r in pair], [0, 0])
        self.assertEqual(last["outcome"], "isolated", last)

    def test_a_network_namespace_each_reaches_nothing_while_both_are_in_flight(self):
        wrap = ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent"]
        pair, last = self.pair(wrap)
        self.assertEqual([r["listening"] for r in pair], [True, True])
        self.assertEqual((last["outcome"], last["evidence"]), ("isolated", "absence"), last)
        self.assertGreater(last["overlap_s"], 0.5)

    def test_calls_that_never_overlap_are_not_judged(self):
        nonce, inv = new_ids()
        first = self.finish(self.start(1, 2, nonce, inv), nonce, inv)
        time.sleep(0.3)
        second = self.finish(self.start(2, 1, nonce, inv), nonce, inv)
        self.assertEqual([first["reached"], second["reached"]], [None, None])
        last = self.close([first, second], nonce, inv)
        self.assertEqual(last["outcome"], "not_concurrent", last)

    def test_a_missing_half_of_the_pair_is_not_judged(self):
        nonce, inv = new_ids()
        self.assertEqual(self.close([None, None], nonce, inv)["outcome"], "no_pair")


if __name__ == "__main__":
    unittest.main()
