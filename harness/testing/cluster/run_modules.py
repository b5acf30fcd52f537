"""Runs several real-cluster test modules on ONE start of the cluster: ci/cluster/up with the
given arguments once, every module's tests against it, ci/cluster/down once after the last
(cluster_util.Fixture). A cluster takes 20-35 s to start and 15-25 s to stop here, and modules
that need the same configuration (test_cluster_enforce, test_cluster_fields, test_cluster_live,
test_cluster_workloads, test_cluster_token) need not pay for it again.

Each module still leaves the cluster as it found it: its tearDownModule fails when an object of
any run is left in any namespace. The egress capture covers the whole, and down must leave
nothing behind; either failing fails the run.

Usage: python3 run_modules.py [UP_ARG...] -- MODULE...
Exit status: 0 when every test passed and the cluster stopped clean; 1 otherwise.
"""
import sys
import time
import unittest

import cluster_util as c
from cluster_util import u


def main(argv):
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    sep = argv.index("--")
    up_args, modules = argv[:sep], argv[sep + 1:]
    if not modules:
        print("run_modules.py: no module named after --", file=sys.stderr)
        return 2
    u.require_sandprobe()
    t0 = time.monotonic()
    fixture = c.Fixture.start_shared(*up_args)
    print("[run_modules] ci/cluster/up %s: %.0f s; modules %s" % (
        " ".join(up_args), fixture.cluster.up_s, " ".join(modules)), file=sys.stderr)
    ok = False
    try:
        suite = unittest.defaultTestLoader.loadTestsFromNames(modules)
        result = unittest.TextTestRunner(verbosity=2).run(suite)
        ok = result.wasSuccessful() and result.testsRun > 0
    finally:
        try:
            fixture.stop()
        except AssertionError as e:
            print("[run_modules] FAILED at the end: %s" % e, file=sys.stderr)
            ok = False
    print("[run_modules] %s in %.0f s, one cluster start" % (
        "passed" if ok else "FAILED", time.monotonic() - t0), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
