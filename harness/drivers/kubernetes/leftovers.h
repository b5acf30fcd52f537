// Leftovers of dead runs in the cluster and namespace of one kubernetes manifest: the Jobs, Pods
// and NetworkPolicies labelled sandprobe.io/run (the kinds KubernetesDriver::Cleanup removes),
// listed per run and removed by deletecollection unless that run is still alive.
#pragma once

#include "drivers/registry.h"

namespace sandprobe::drivers::kube {

// Source: the API server's list endpoints (labelSelector sandprobe.io/run). Errors are counted
// in `t.failed` and printed as "kubernetes <server> namespace <ns>: ...". A place (server +
// namespace) already swept by an earlier call in this process is skipped.
void SweepLeftovers(const SweepRequest& r, SweepTally& t);

}  // namespace sandprobe::drivers::kube
