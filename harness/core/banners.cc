#include "core/banners.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "core/facts.h"
#include "core/json_field.h"

namespace sandprobe::core {

std::vector<std::string> PolicyNotEnforcedBanners(const Matrix& m) {
  std::set<std::string> net_rows;  // probes whose row is in the network category
  for (const Row& r : m.rows) {
    if (r.category == "net") net_rows.insert(r.probe);
  }
  std::set<std::string> exposed_in_control;  // net probes some control was exposed on
  for (const Cell& c : m.cells) {
    const ArmInfo* arm = m.FindArm(c.observation.arm);
    if (arm != nullptr && arm->role == ArmRole::kControl &&
        c.classification.exposure == Exposure::kExposed && net_rows.contains(c.observation.probe))
      exposed_in_control.insert(c.observation.probe);
  }
  struct Leak {
    std::set<std::string> rows;
    double min_age = -1;  // youngest policy age seen on a leaking invocation, seconds
  };
  std::map<std::string, Leak> leaks;  // arm -> its leaking rows
  for (const Cell& c : m.cells) {
    const ArmInfo* arm = m.FindArm(c.observation.arm);
    if (arm == nullptr || arm->role != ArmRole::kCandidate) continue;
    if (StringField(c.observation.driver_facts, fact::kNetworkPolicy).empty()) continue;
    if (c.classification.exposure != Exposure::kExposed) continue;
    // Traffic seen, never inferred: positive evidence only (a canary hit, an answer), and never a
    // cell the arm's mechanism does not govern (net.interfaces under a policy: not judged).
    if (c.classification.evidence != Evidence::kPositive) continue;
    if (c.observation.driver_facts.contains(fact::kNotJudged)) continue;
    if (!exposed_in_control.contains(c.observation.probe)) continue;
    Leak& leak = leaks[c.observation.arm];
    leak.rows.insert(c.observation.probe);
    const auto age = c.observation.driver_facts.find(fact::kPolicyAgeS);
    if (age != c.observation.driver_facts.end() && age->is_number()) {
      const double a = age->get<double>();
      if (leak.min_age < 0 || a < leak.min_age) leak.min_age = a;
    }
  }
  if (leaks.empty()) return {};
  std::vector<std::string> parts;
  for (const auto& [arm, leak] : leaks) {
    std::string rows;
    for (const std::string& r : leak.rows) rows += (rows.empty() ? "" : ", ") + r;
    parts.push_back(leak.min_age >= 0
                        ? fmt::format("{} (policy {:.0f}s old) reached {}", arm, leak.min_age, rows)
                        : fmt::format("{} reached {}", arm, rows));
  }
  std::string joined;
  for (const std::string& p : parts) joined += (joined.empty() ? "" : "; ") + p;
  return {
      fmt::format("NetworkPolicy is accepted but not enforced on this cluster: {}, as the "
                  "control did",
                  joined)};
}

}  // namespace sandprobe::core
