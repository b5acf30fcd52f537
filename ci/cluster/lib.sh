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
# Every node's pods (node 1 10.252.0.0/24, node 2 10.252.1.0/24): kube-proxy's clusterCIDR.
CLUSTER_POD_CIDR=10.252.0.0/16
SERVICE_CIDR=10.253.0.0/24
API_SERVICE_IP=10.253.0.1
DNS_SERVICE_IP=10.253.0.10
# --ip-family dual: a second, IPv6 range beside each IPv4 one, unique-local (fd00::/8) and
# routed nowhere off the machine (the namespace has no IPv6 default route either).
NODE_IP6=fd00:251::2
LINK_CIDR6=fd00:251::/64
POD_CIDR6=fd00:252::/64
CLUSTER_POD_CIDR6=fd00:252::/56
SERVICE_CIDR6=fd00:253::/112
NODE_NAME=sandprobe-node
CGROUP_ROOT=/sandprobe-cluster
CONTAINERD_SOCK=$CLUSTER_RUN/containerd/containerd.sock
# The node's processes also share one mount namespace of their own (pinned at this file), so the
# mounts kubelet and containerd make vanish with it instead of landing in the host's table.
CLUSTER_MNTNS=$CLUSTER_RUN/mnt/ns

log() { printf '%s %s\n' "[$(date +%T)] ${0##*/}:" "$*" >&2; }
die() { log "$*"; exit 1; }

# measured FORMAT CMD...: CMD under GNU time (FORMAT's %e, %U, %M: wall, user, peak RSS) where it
# is installed (ci/bootstrap installs it); before that (ci/test starts the builds first), the wall
# time alone, as "NAME: N s wall" with FORMAT's NAME.
measured() {
  local fmt=$1
  shift
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f "$fmt" "$@"
    return
  fi
  local t0=$SECONDS rc=0
  "$@" || rc=$?
  echo "${fmt%%:*}: $((SECONDS - t0)) s wall" >&2
  return "$rc"
}

# in_cluster CMD...: runs CMD in the cluster's network and mount namespaces. nsenter, not
# `ip netns exec`, which remounts /sys and would hide the cgroup mounts from kubelet.
in_cluster() {
  nsenter --net="/run/netns/$CLUSTER_NETNS" --mount="$CLUSTER_MNTNS" -- "$@"
}

# A second node (`up --nodes 2`): its own network namespace, joined to the first node's (not to
# the host) by a veth pair on 10.251.1.0/30, its own mount namespace, containerd, kubelet,
# kube-proxy and (when it enforces) kube-router, its own cgroup root and state. Node 1 routes
# node 2's pod range to it and back; the API server stays on node 1. Node 1's names above are
# unchanged, so a one-node cluster is exactly what it was.
NODE2_NAME=sandprobe-node2
NODE2_NETNS=sandprobe-node2
NODE2_IP=10.251.1.2
NODE2_PEER_IP=10.251.1.1   # node 1's end of the link to node 2
NODE2_LINK_CIDR=10.251.1.0/30
NODE2_IF=spk-n1            # in node 2's namespace, towards node 1
NODE2_PEER_IF=spk-n2       # in node 1's namespace, towards node 2
NODE2_POD_CIDR=10.252.1.0/24
NODE2_CGROUP_ROOT=/sandprobe-cluster-node2
NODE2_STATE=$CLUSTER_STATE/node2
NODE2_RUN=$CLUSTER_RUN/node2
CONTAINERD2_SOCK=$NODE2_RUN/containerd/containerd.sock
CLUSTER_MNTNS2=$CLUSTER_RUN/mnt/ns2
in_node2() {
  nsenter --net="/run/netns/$NODE2_NETNS" --mount="$CLUSTER_MNTNS2" -- "$@"
}
# cluster_processes: the pids of every process of a cluster, found by what it runs rather than by
# the pid files (a cluster started where /run was private, as harness/testing/cluster/
# without_run_netns makes it, leaves no pid file the host sees): a binary of the cluster's cache,
# or a command line naming the cluster's state or run folder (etcd, containerd, the shims).
cluster_processes() {
  local p exe args
  for p in /proc/[0-9]*; do
    [[ ${p#/proc/} == "$$" || ${p#/proc/} == "$BASHPID" ]] && continue
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    args=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
    if [[ $exe == "$CLUSTER_CACHE"/bin-*/* || $exe == "$CLUSTER_CACHE"/gvisor-*/* ||
          $args == *"$CLUSTER_STATE/"* || $args == *"$CLUSTER_RUN/"* ]]; then
      echo "${p#/proc/}"
    fi
  done
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
