#include "drivers/kubernetes/arms.h"

#include <fmt/format.h>

#include "drivers/kubernetes/api_client.h"
#include "drivers/kubernetes/kube_section.h"
#include "drivers/kubernetes/kubeconfig.h"
#include "drivers/kubernetes/kubernetes_driver.h"

namespace sandprobe::drivers::kube {
namespace {

std::expected<std::vector<std::string>, std::string> NodesOf(const core::Manifest& m,
                                                             const ClusterChoice& cluster,
                                                             const std::string& nodes) {
  auto conn = ResolveConnection(cluster, ProcessEnv());
  if (!conn) return std::unexpected(conn.error());
  const ApiClient client(std::move(*conn));
  auto names = ListSchedulableNodes(client, nodes == "all" ? "" : nodes);
  if (!names) return std::unexpected(fmt::format("--nodes {}: {}", nodes, names.error()));
  if (names->empty()) {
    return std::unexpected(
        fmt::format("--nodes {}: no schedulable node matches (arm {})", nodes, m.name));
  }
  return names;
}

// The settings an arm carries, to be changed in place (its twins are copies).
KubeSettings& Settings(core::Manifest& m) { return std::any_cast<KubeSettings&>(m.section); }

}  // namespace

std::expected<std::vector<core::Manifest>, std::string> ArmVariants(core::Manifest m,
                                                                    const ArmOptions& options) {
  if (std::any_cast<KubeSettings>(&m.section) == nullptr) {
    return std::unexpected(SettingsOf(m).error());
  }
  if (!options.context.empty()) Settings(m).cluster.context = options.context;
  std::vector<core::Manifest> arms;
  if (const std::optional<double> age = Settings(m).aged_rerun_s) {
    Settings(m).aged_rerun_s.reset();
    core::Manifest aged = m;
    Settings(aged).min_policy_age_s = *age;
    aged.name = m.name + "-aged";
    aged.description = fmt::format("{} (re-run once its policy is {:g}s old)", m.description, *age);
    arms.push_back(std::move(m));
    arms.push_back(std::move(aged));
  } else {
    arms.push_back(std::move(m));
  }
  // settledRerun: each arm so far gets a twin whose pods wait before probing. A row that leaks in
  // a fresh pod and holds in a settled one is "enforced late for new pods" (core/banners.h).
  if (const std::optional<double> settle = Settings(arms.front()).settled_rerun_s) {
    std::vector<core::Manifest> with_settled;
    for (core::Manifest& a : arms) {
      Settings(a).settled_rerun_s.reset();
      core::Manifest settled = a;
      Settings(settled).pod_settle_s = *settle;
      settled.name = a.name + "-settled";
      settled.description =
          fmt::format("{} (pods wait {:g}s before probing)", a.description, *settle);
      with_settled.push_back(std::move(a));
      with_settled.push_back(std::move(settled));
    }
    arms = std::move(with_settled);
  }
  if (options.nodes.empty()) return arms;
  auto nodes = NodesOf(arms.front(), Settings(arms.front()).cluster, options.nodes);
  if (!nodes) return std::unexpected(nodes.error());
  std::vector<core::Manifest> out;
  for (core::Manifest& a : arms) {
    for (const std::string& node : *nodes) {
      core::Manifest pinned = a;
      pinned.name = a.name + "@" + node;
      Settings(pinned).node = node;
      out.push_back(std::move(pinned));
    }
  }
  return out;
}

}  // namespace sandprobe::drivers::kube
