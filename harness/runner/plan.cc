#include "runner/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/params.h"

namespace sandprobe::runner {
namespace {

core::ArmInfo Info(const core::Manifest& m, core::ArmRole role) {
  return core::ArmInfo{m.name,        role,      m.driver,  m.description,
                       m.source_path, m.weakens, m.control, m.limits};
}

void CollectPlaceholders(const nlohmann::json& v, std::set<std::string>& out) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    for (size_t open = s.find('{'); open != std::string::npos; open = s.find('{', open + 1)) {
      const size_t close = s.find('}', open);
      if (close == std::string::npos) break;
      out.insert(s.substr(open + 1, close - open - 1));
      open = close;
    }
  } else if (v.is_array() || v.is_object()) {
    for (const auto& child : v) CollectPlaceholders(child, out);
  }
}

}  // namespace

std::set<std::string> PlaceholdersUsed(const core::Suite& suite) {
  std::set<std::string> out;
  for (const core::SuiteEntry& e : suite.entries) CollectPlaceholders(e.params, out);
  return out;
}

double ArmDeadline(const core::Manifest& arm, const Timing& timing) {
  return arm.limits.timeout_s.value_or(timing.default_timeout_s) + timing.grace_s;
}

std::expected<std::vector<PlannedInvocation>, std::string> PlanArmInvocations(
    const core::Suite& suite, const std::vector<core::ProbeDescriptor>& probes,
    const core::Manifest& arm, const std::map<std::string, std::string>& substitutions,
    const std::string& preamble, const std::string& nonce, const Timing& timing,
    const std::string& only_probe) {
  std::vector<PlannedInvocation> out;
  for (const core::SuiteEntry& entry : suite.entries) {
    if (!only_probe.empty() && entry.probe != only_probe) continue;
    auto probe = std::ranges::find(probes, entry.probe, &core::ProbeDescriptor::id);
    if (probe == probes.end()) {
      return std::unexpected(fmt::format("suite names unknown probe {}", entry.probe));
    }
    if (!probe->AppliesTo(arm.driver)) continue;
    auto params = core::ResolveParams(*probe, entry.params, arm.limits, substitutions);
    if (!params) return std::unexpected(params.error());
    const std::string invocation = fmt::format("i{:03d}", out.size());
    auto script = core::BuildScript(*probe, preamble, *params, nonce, invocation);
    if (!script) return std::unexpected(script.error());
    out.push_back(
        {probe->id, invocation, std::move(*script), ArmDeadline(arm, timing), probe->deploy});
  }
  return out;
}

std::expected<Plan, std::string> PlanRun(
    const core::Suite& suite, const std::vector<core::ProbeDescriptor>& probes,
    const std::vector<core::Manifest>& candidates, const std::vector<core::Manifest>& controls,
    const std::map<std::string, std::string>& substitutions, const Timing& timing,
    const std::map<std::string, std::map<std::string, std::string>>& by_arm,
    const std::map<std::string, std::string>& families) {
  if (candidates.empty()) return std::unexpected("no candidate sandbox to test");
  Plan plan;
  std::set<std::string> names;
  for (const auto& m : controls) plan.arms.push_back(Info(m, core::ArmRole::kControl));
  for (const auto& m : candidates) plan.arms.push_back(Info(m, core::ArmRole::kCandidate));
  for (const auto& a : plan.arms) {
    if (!names.insert(a.name).second) {
      return std::unexpected(fmt::format("two arms are named '{}'; arm names must differ", a.name));
    }
  }
  for (size_t row = 0; row < suite.entries.size(); ++row) {
    const core::SuiteEntry& entry = suite.entries[row];
    auto it = std::ranges::find(probes, entry.probe, &core::ProbeDescriptor::id);
    if (it == probes.end()) {
      return std::unexpected(
          fmt::format("suite {} names probe '{}', which is not in the probe tree (see "
                      "`sandprobe list`)",
                      suite.source_path, entry.probe));
    }
    const core::ProbeDescriptor& probe = *it;
    plan.rows.push_back({probe.id, probe.label, entry.level, probe.category, probe.beyond_policy});
    std::vector<Task> control_tasks, candidate_tasks;
    for (const auto& cand : candidates) {
      if (!probe.AppliesTo(cand.driver)) {
        plan.skips.push_back({probe.id, cand.name,
                              fmt::format("probe applies to {} only; candidate {} uses driver {}",
                                          fmt::join(probe.drivers, ", "), cand.name, cand.driver)});
        continue;
      }
      const auto own = by_arm.find(cand.name);
      auto params = core::ResolveParams(probe, entry.params, cand.limits,
                                        own != by_arm.end() ? own->second : substitutions);
      if (!params)
        return std::unexpected(fmt::format("suite {}: {}", suite.source_path, params.error()));
      const auto family_it = families.find(cand.name);
      const std::string family = family_it != families.end() ? family_it->second : "";
      if (!family.empty() && probe.params.contains("ip_family")) {
        return std::unexpected(
            fmt::format("probe {} declares a parameter ip_family, the name an arm's address family "
                        "(kubernetes.ipFamily of {}) is given to every row by: rename the probe's",
                        probe.id, cand.name));
      }
      if (!family.empty()) (*params)["ip_family"] = family;
      const double deadline = ArmDeadline(cand, timing);
      const std::string key = core::ParamsKey(*params);
      candidate_tasks.push_back({row, probe.id, cand.name, false, *params, key, deadline, family});
      for (const auto& ctl : controls) {
        if (!probe.AppliesTo(ctl.driver)) continue;
        auto same = std::ranges::find_if(
            control_tasks, [&](const Task& t) { return t.arm == ctl.name && t.params_key == key; });
        if (same != control_tasks.end()) {
          same->deadline_s = std::max(same->deadline_s, deadline);
        } else {
          control_tasks.push_back({row, probe.id, ctl.name, true, *params, key, deadline, family});
        }
      }
    }
    // Controls first within a row: their evidence is what makes a candidate's PASS count.
    plan.tasks.insert(plan.tasks.end(), control_tasks.begin(), control_tasks.end());
    plan.tasks.insert(plan.tasks.end(), candidate_tasks.begin(), candidate_tasks.end());
  }
  return plan;
}

std::expected<void, std::string> CheckControlBudget(
    const Plan& plan, const std::vector<core::ProbeDescriptor>& probes, const HostBudget& budget) {
  for (const Task& t : plan.tasks) {
    if (!t.control) continue;
    const auto probe = std::ranges::find(probes, t.probe, &core::ProbeDescriptor::id);
    if (probe == probes.end()) continue;
    for (const auto& [name, spec] : probe->params) {
      if (spec.unit != "MiB" || (spec.from_limit != "memory" && spec.from_limit != "tmp")) continue;
      const auto it = t.params.find(name);
      if (it == t.params.end() || !it->is_number()) continue;
      const double mib = it->get<double>();
      const double allowed = spec.from_limit == "memory" ? budget.memory_mib : budget.tmp_mib;
      if (mib > allowed) {
        return std::unexpected(fmt::format(
            "{} {}={} MiB would make the unsandboxed control arm {} {} MiB on this host, over "
            "its budget of {:.0f} MiB (half of the available {})",
            t.probe, name, mib, spec.from_limit == "memory" ? "allocate" : "write", mib, allowed,
            spec.from_limit == "memory" ? "memory" : "space under /tmp"));
      }
    }
  }
  return {};
}

}  // namespace sandprobe::runner
