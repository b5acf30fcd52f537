// Arms derived from kubernetes manifests before a run:
//   kubernetes.agedRerun: 60s  adds "<name>-aged": the same Job, submitted only once its own
//                              NetworkPolicy is that old (minPolicyAge), next to the fresh arm;
//   --nodes all|<selector>     replaces each kubernetes arm by one arm per schedulable node,
//                              "<name>@<node>" (spec.nodeName), because enforcement can differ
//                              per node (a CNI agent down on one node);
//   --context NAME             sets kubernetes.context on every kubernetes arm.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "core/manifest.h"

namespace sandprobe::cli {

struct KubeArmOptions {
  std::string nodes;    // "" = the scheduler's choice; "all"; or a label selector
  std::string context;  // "" = the manifest's / current context
};

// Expands `manifests` in place (order kept: each arm, then its aged twin, per node). Errors: an
// unreadable agedRerun, a cluster that cannot list its nodes, a selector matching none.
std::expected<void, std::string> ExpandKubernetesArms(std::vector<core::Manifest>& manifests,
                                                      const KubeArmOptions& options);

}  // namespace sandprobe::cli
