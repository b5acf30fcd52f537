#include "core/banners.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "core/facts.h"
#include "core/json_field.h"

namespace sandprobe::core {

namespace {

std::set<std::string> NetRows(const Matrix& m) {
  std::set<std::string> net_rows;  // probes whose row is in the network category
  for (const Row& r : m.rows) {
    if (r.category == "net") net_rows.insert(r.probe);
  }
  return net_rows;
}

// Traffic seen, never inferred: positive evidence only (a canary hit, an answer), and never a
// cell the arm's mechanism does not govern (net.interfaces under a policy: not judged).
// `beyond_policy`: the row's exposed outcome is traffic the policy as written does not allow
// (Row::beyond_policy), whatever else the policy allows.
bool PolicyLeak(const Cell& c, bool beyond_policy = false) {
  return !StringField(c.observation.driver_facts, fact::kNetworkPolicy).empty() &&
         // A policy that allows some egress as written (DNS, say) is not contradicted by that
         // traffic: the report's note names what it allows.
         (beyond_policy ||
          c.observation.driver_facts.value(fact::kPolicyDeniesAllEgress, false) == true) &&
         // A policy that does not select the pod, or another policy that allows egress to it
         // (policies add up), explains the leak without any failure of enforcement.
         c.observation.driver_facts.value(fact::kPolicySelectsPod, true) == true &&
         !c.observation.driver_facts.contains(fact::kOtherPoliciesAllowingEgress) &&
         c.classification.exposure == Exposure::kExposed &&
         c.classification.evidence == Evidence::kPositive && c.observation.not_judged.empty() &&
         // A host-network pod is outside every NetworkPolicy: its leak is the template's doing
         // (a report note names it), not evidence about enforcement.
         c.observation.driver_facts.value(fact::kHostNetwork, false) != true &&
         // An arm that changes its pods while they run (kubernetes.liveChange: the fact is
         // there even when the change failed, since a PATCH that timed out may still have
         // landed) says nothing about enforcement as configured: its own row judges it.
         !c.observation.driver_facts.contains(fact::kLiveChange);
}

constexpr std::string_view kSettled = "-settled";

// The settled twin of an arm: "k8s-deny" -> "k8s-deny-settled", and per node (the twin is made
// before --nodes pins arms) "k8s-deny@n1" -> "k8s-deny-settled@n1".
std::string SettledTwin(const std::string& arm) {
  const size_t at = arm.find('@');
  if (at == std::string::npos) return arm + std::string(kSettled);
  return arm.substr(0, at) + std::string(kSettled) + arm.substr(at);
}

// (arm, probe) pairs whose leak its settled twin did not reproduce: arm -> {rows}, with the
// settle time seen and the youngest policy age.
struct Late {
  std::set<std::string> rows;
  double settle_s = 0;
  double min_age = -1;
};

// The arm as banners name it: with its address family when it measures one.
std::string Titled(const Matrix& m, const std::string& arm) {
  const ArmInfo* info = m.FindArm(arm);
  return info != nullptr ? ArmTitle(*info) : arm;
}

std::map<std::string, Late> LatePairs(const Matrix& m) {
  const std::set<std::string> net_rows = NetRows(m);
  std::set<std::string> beyond;  // rows whose leak is beyond any policy as written
  for (const Row& r : m.rows) {
    if (r.beyond_policy) beyond.insert(r.probe);
  }
  std::map<std::string, Late> late;
  for (const Cell& c : m.cells) {
    const ArmInfo* arm = m.FindArm(c.observation.arm);
    if (arm == nullptr || arm->role != ArmRole::kCandidate) continue;
    if (!net_rows.contains(c.observation.probe) ||
        !PolicyLeak(c, beyond.contains(c.observation.probe))) {
      continue;
    }
    const Cell* settled = m.Find(c.observation.probe, SettledTwin(c.observation.arm));
    if (settled == nullptr || settled->classification.exposure != Exposure::kContained) continue;
    Late& l = late[c.observation.arm];
    l.rows.insert(c.observation.probe);
    if (auto s = settled->observation.driver_facts.find(fact::kPodSettleS);
        s != settled->observation.driver_facts.end() && s->is_number()) {
      l.settle_s = s->get<double>();
    }
    if (auto a = c.observation.driver_facts.find(fact::kPolicyAgeS);
        a != c.observation.driver_facts.end() && a->is_number()) {
      const double age = a->get<double>();
      if (l.min_age < 0 || age < l.min_age) l.min_age = age;
    }
  }
  return late;
}

}  // namespace

std::vector<std::string> PolicyLateBanners(const Matrix& m) {
  const auto late = LatePairs(m);
  if (late.empty()) return {};
  std::vector<std::string> parts;
  for (const auto& [arm, l] : late) {
    parts.push_back(fmt::format(
        "{}{} reached {} in a fresh pod; {} held them in pods that waited {:g}s", Titled(m, arm),
        l.min_age >= 0 ? fmt::format(" (policy {:.0f}s old)", l.min_age) : "",
        fmt::join(l.rows, ", "), Titled(m, SettledTwin(arm)), l.settle_s));
  }
  return {fmt::format("NetworkPolicy is enforced late for new pods on this cluster: {}",
                      fmt::join(parts, "; "))};
}

std::vector<std::string> PolicyBanners(const Matrix& m) {
  std::vector<std::string> out = PolicyLateBanners(m);
  for (std::string& b : PolicyNotEnforcedBanners(m)) out.push_back(std::move(b));
  return out;
}

std::vector<std::string> PolicyNotEnforcedBanners(const Matrix& m) {
  const std::set<std::string> net_rows = NetRows(m);
  const auto late = LatePairs(m);
  // (net probe, params_key) some control was exposed on: a candidate's leak counts beside the
  // control's run of what it sent (a control exposed in one address family backs nothing of the
  // other's).
  std::set<std::pair<std::string, std::string>> exposed_in_control;
  for (const Cell& c : m.cells) {
    const ArmInfo* arm = m.FindArm(c.observation.arm);
    if (arm != nullptr && arm->role == ArmRole::kControl &&
        c.classification.exposure == Exposure::kExposed && net_rows.contains(c.observation.probe))
      exposed_in_control.insert({c.observation.probe, c.observation.params_key});
  }
  struct Leak {
    std::set<std::string> rows;
    double min_age = -1;  // youngest policy age seen on a leaking invocation, seconds
  };
  std::map<std::string, Leak> leaks;  // arm -> its leaking rows
  for (const Cell& c : m.cells) {
    const ArmInfo* arm = m.FindArm(c.observation.arm);
    if (arm == nullptr || arm->role != ArmRole::kCandidate) continue;
    if (!PolicyLeak(c)) continue;
    if (!exposed_in_control.contains({c.observation.probe, c.observation.params_key})) continue;
    if (auto l = late.find(c.observation.arm);
        l != late.end() && l->second.rows.contains(c.observation.probe)) {
      continue;  // explained: enforced late for new pods
    }
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
    parts.push_back(leak.min_age >= 0 ? fmt::format("{} (policy {:.0f}s old) reached {}",
                                                    Titled(m, arm), leak.min_age, rows)
                                      : fmt::format("{} reached {}", Titled(m, arm), rows));
  }
  std::string joined;
  for (const std::string& p : parts) joined += (joined.empty() ? "" : "; ") + p;
  return {
      fmt::format("NetworkPolicy is accepted but not enforced on this cluster: {}, as the "
                  "control did",
                  joined)};
}

}  // namespace sandprobe::core
