// Arms derived from one kubernetes manifest before a run:
//   kubernetes.agedRerun: 60s  adds "<name>-aged": the same Job, submitted only once its own
//                              NetworkPolicy is that old (minPolicyAge), next to the fresh arm;
//   kubernetes.settledRerun: 5s adds "<name>-settled" after each arm: pods that wait that long
//                              before probing (podSettle), so a row that leaks in a fresh pod and
//                              holds in a settled one reads "enforced late for new pods";
//   --nodes all|<selector>     replaces each arm by one arm per schedulable node,
//                              "<name>@<node>" (spec.nodeName), because enforcement can differ
//                              per node (a CNI agent down on one node);
//   --context NAME             sets kubernetes.context on every kubernetes arm.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "drivers/registry.h"

namespace sandprobe::drivers::kube {

// The arms `manifest` stands for, in order: the arm, its settled twin, the aged twin and its
// settled twin, each per node; each twin carries its own copy of the arm's KubeSettings
// (min_policy_age_s, pod_settle_s, node changed). Errors: a manifest without its section read, a
// cluster that cannot list its nodes, a selector matching none.
std::expected<std::vector<core::Manifest>, std::string> ArmVariants(core::Manifest manifest,
                                                                    const ArmOptions& options);

}  // namespace sandprobe::drivers::kube
