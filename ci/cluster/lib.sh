# Shared by ci/cluster/{build,up,down,images}: where the one-node test cluster keeps its binaries,
# state and logs, its addresses, and small helpers. Sourced, never run. docs/cluster.md explains
# the layout; every name here is the cluster's own, so `down` can remove exactly what `up` made.

# Pinned versions (docs/cluster.md "Versions"): k8s.io/kubernetes and its staging modules, the
# Debian packages (etcd-server, containerd, runc, CNI plugins), kube-router, CoreDNS.
KUBE_VERSION=v1.34.4
KUBE_ROUTER_VERSION=v2.1.0
COREDNS_VERSION=v1.14.7

# Go 1.26 lives in /usr/local/go on the project's machines; a non-login shell may not have it on
# PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  PATH=/usr/local/go/bin:$PATH
fi

CLUSTER_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Built once per machine, outside the checkout (a fresh clone reuses it).
CLUSTER_CACHE=${SANDPROBE_CLUSTER_CACHE:-/var/cache/sandprobe-cluster}
export GOMODCACHE=$CLUSTER_CACHE/gomod GOCACHE=$CLUSTER_CACHE/gocache GOTOOLCHAIN=local
export GOFLAGS=-mod=mod GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}
# State of a running cluster: wiped by `up`, removed by `down`.
CLUSTER_STATE=${SANDPROBE_CLUSTER_STATE:-/var/lib/sandprobe-cluster}
CLUSTER_RUN=/run/sandprobe-cluster
CLUSTER_LOGS=$CLUSTER_STATE/logs
# The kubeconfig `up` writes (cluster-admin) and the ServiceAccount one (ci/kubernetes/rbac.yaml).
CLUSTER_KUBECONFIG=$CLUSTER_STATE/admin.kubeconfig

# Network: everything lives in the network namespace $CLUSTER_NETNS. A veth pair joins it to the
# host (host side $HOST_IF at $HOST_IP, node side at $NODE_IP) so the harness on the host can
# reach the API server; the namespace has no default route and the host drops what arrives from
# it unless it answers a connection the host opened: no packet of the cluster leaves the machine.
CLUSTER_NETNS=sandprobe-cluster
HOST_IF=spk-host
NODE_IF=spk-node
HOST_IP=10.251.0.1
NODE_IP=10.251.0.2
LINK_CIDR=10.251.0.0/30
POD_CIDR=10.252.0.0/24
SERVICE_CIDR=10.253.0.0/24
API_SERVICE_IP=10.253.0.1
DNS_SERVICE_IP=10.253.0.10
NODE_NAME=sandprobe-node
CGROUP_ROOT=/sandprobe-cluster
CONTAINERD_SOCK=$CLUSTER_RUN/containerd/containerd.sock
# The node's processes also share one mount namespace of their own (pinned at this file), so the
# mounts kubelet and containerd make vanish with it instead of landing in the host's table.
CLUSTER_MNTNS=$CLUSTER_RUN/mnt/ns

log() { printf '%s %s\n' "[$(date +%T)] ${0##*/}:" "$*" >&2; }
die() { log "$*"; exit 1; }

# in_cluster CMD...: runs CMD in the cluster's network and mount namespaces. nsenter, not
# `ip netns exec`, which remounts /sys and would hide the cgroup mounts from kubelet.
in_cluster() {
  nsenter --net="/run/netns/$CLUSTER_NETNS" --mount="$CLUSTER_MNTNS" -- "$@"
}

# The binaries' directory, keyed by what decides their content: the go.sum files, the Go
# version and the build script (ci/cluster/build).
cluster_bin_key() {
  {
    cat "$CLUSTER_SRC"/go/*/go.mod "$CLUSTER_SRC"/go/*/go.sum "$CLUSTER_SRC"/go/*/*.go \
      "$CLUSTER_SRC"/go/pause.c "$CLUSTER_SRC/build" 2>/dev/null
    go version
  } | sha256sum | cut -c1-16
}
cluster_bin_dir() { echo "$CLUSTER_CACHE/bin-$(cluster_bin_key)"; }
