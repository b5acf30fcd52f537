#include "drivers/kubernetes/arms.h"

#include <fmt/format.h>

#include "core/limits.h"
#include "drivers/kubernetes/api_client.h"
#include "drivers/kubernetes/kubeconfig.h"
#include "drivers/kubernetes/kubernetes_driver.h"

namespace sandprobe::drivers::kube {
namespace {

std::expected<std::vector<std::string>, std::string> NodesOf(const core::Manifest& m,
                                                             const std::string& nodes) {
  auto conn = ResolveConnection(m.driver_config, ProcessEnv());
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

// A duration as the section check accepts it (kube_section.h): "60s", or a number of seconds.
std::expected<double, std::string> Duration(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return core::ParseSeconds(v.get<std::string>());
  return std::unexpected("expected a duration such as 60s");
}

}  // namespace

std::expected<std::vector<core::Manifest>, std::string> ArmVariants(core::Manifest m,
                                                                    const ArmOptions& options) {
  if (!options.context.empty()) m.driver_config["context"] = options.context;
  std::vector<core::Manifest> arms;
  if (m.driver_config.contains("agedRerun")) {
    const nlohmann::json& v = m.driver_config["agedRerun"];
    auto age = Duration(v);
    if (!age) {
      return std::unexpected(
          fmt::format("manifest {}: kubernetes.agedRerun: {}", m.source_path, age.error()));
    }
    core::Manifest aged = m;
    aged.driver_config.erase("agedRerun");
    aged.driver_config["minPolicyAge"] = v;
    aged.name = m.name + "-aged";
    aged.description = fmt::format("{} (re-run once its policy is {:g}s old)", m.description, *age);
    m.driver_config.erase("agedRerun");
    arms.push_back(std::move(m));
    arms.push_back(std::move(aged));
  } else {
    arms.push_back(std::move(m));
  }
  // settledRerun: each arm so far gets a twin whose pods wait before probing. A row that leaks in
  // a fresh pod and holds in a settled one is "enforced late for new pods" (core/banners.h).
  if (arms.front().driver_config.contains("settledRerun")) {
    const nlohmann::json v = arms.front().driver_config["settledRerun"];
    auto settle = Duration(v);
    if (!settle) {
      return std::unexpected(fmt::format("manifest {}: kubernetes.settledRerun: {}",
                                         arms.front().source_path, settle.error()));
    }
    std::vector<core::Manifest> with_settled;
    for (core::Manifest& a : arms) {
      a.driver_config.erase("settledRerun");
      core::Manifest settled = a;
      settled.driver_config["podSettle"] = v;
      settled.name = a.name + "-settled";
      settled.description =
          fmt::format("{} (pods wait {:g}s before probing)", a.description, *settle);
      with_settled.push_back(std::move(a));
      with_settled.push_back(std::move(settled));
    }
    arms = std::move(with_settled);
  }
  if (options.nodes.empty()) return arms;
  auto nodes = NodesOf(arms.front(), options.nodes);
  if (!nodes) return std::unexpected(nodes.error());
  std::vector<core::Manifest> out;
  for (const core::Manifest& a : arms) {
    for (const std::string& node : *nodes) {
      core::Manifest pinned = a;
      pinned.name = a.name + "@" + node;
      pinned.driver_config["node"] = node;
      out.push_back(std::move(pinned));
    }
  }
  return out;
}

}  // namespace sandprobe::drivers::kube
