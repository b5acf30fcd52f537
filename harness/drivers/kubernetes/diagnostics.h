// What a policy arm's report rules out before anyone concludes "NetworkPolicy is not enforced"
// (docs/traps.md, trap 14): the checks an operator would otherwise make by hand with kubectl.
// Pure helpers (table-tested in diagnostics_test.cc) and one reader that asks the API server.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "drivers/kubernetes/api_client.h"

namespace sandprobe::drivers::kube {

// Whether a metav1.LabelSelector (matchLabels, matchExpressions: In, NotIn, Exists,
// DoesNotExist) selects `labels`; an empty selector selects everything. nullopt when the
// selector is malformed or uses an operator this does not know.
std::optional<bool> SelectorMatches(const nlohmann::json& selector, const nlohmann::json& labels);

// "policyTypes [Egress], deny all egress" / "policyTypes [Egress], 2 egress rules (ports 53/UDP,
// 53/TCP; to any)" from a stored networking.k8s.io/v1 NetworkPolicy.
std::string PolicySummary(const nlohmann::json& policy);

// CNI hints from node annotations and kube-system DaemonSets (either may be null: not readable):
// "flannel (node annotation flannel.alpha.coreos.com/backend-type)", "k3s (node annotation
// k3s.io/node-args: --disable-network-policy)", "calico (DaemonSet calico-node)", "cilium ...".
// Flannel alone, and k3s started with --disable-network-policy, do not enforce NetworkPolicy;
// the hint says so.
std::vector<std::string> CniHints(const nlohmann::json& nodes, const nlohmann::json& daemonsets);

// What the policy arm's checks found, one fact per entry, and what could not be checked (why).
struct RuledOut {
  std::vector<std::string> facts;
  std::vector<std::string> not_checked;
  std::string Line() const;  // "ruled out before concluding: a; b; c. Not checked: x (why)"
};

// The inputs the driver saw during the run.
struct PolicyArmView {
  std::string ns;
  std::string policy_name;     // as created by the driver
  nlohmann::json pod_labels;   // a probe Pod's metadata.labels as stored (null: none seen)
  bool host_network = false;   // that Pod's spec.hostNetwork
  std::string server_version;  // GET /version gitVersion ("" = not read)
};

// GETs the policy as stored, /apis/networking.k8s.io/v1, the NetworkPolicies of all namespaces,
// nodes and kube-system DaemonSets, each within `deadline`; a refused or failed read goes to
// not_checked with the API's answer (RBAC 403s are expected for a namespaced Role).
RuledOut CheckPolicyArm(const ApiClient& client, const PolicyArmView& view,
                        Clock::time_point deadline);

}  // namespace sandprobe::drivers::kube
