"""The Kubernetes run of ci/bench/cost: the arguments of `sandprobe run` for the egress suite
against the shipped deny-egress manifest and its open control, adjusted for the test cluster of
ci/cluster as the cluster tests adjust them (harness/testing/cluster/real_manifests.py: the probe
image imported into the node, runtimeClassName runc, net.metadata aimed at the run's in-cluster
canary: nothing leaves the cluster's namespace) and with the shipped timeouts (no test shortcuts).

Usage: kube_args.py DIR   writes the manifests and suite into DIR, prints one argument per line.
"""
import os
import sys

HOME = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(HOME, "harness", "testing", "cluster"))
import real_manifests as rm  # noqa: E402


def main(directory):
    os.makedirs(directory, exist_ok=True)
    args = rm.shipped_egress_run(directory)
    fast = rm.FAST
    if args[-len(fast):] == fast:
        args = args[:-len(fast)]
    print("\n".join(args))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
