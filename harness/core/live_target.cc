#include "core/live_target.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/json_field.h"
#include "core/text.h"

namespace sandprobe::core {
namespace {

std::string ResultField(const Observation& obs, const std::string& field) {
  return obs.result ? StringField(*obs.result, field) : std::string();
}

// The address a result names in `field`: a non-empty string, or a list of exactly one (a name
// that resolved to one address). "" when there is none or more than one: a refusal at one
// address and a reach at another prove nothing about each other.
std::string OneAddress(const Observation& obs, const std::string& field) {
  if (!obs.result || !obs.result->is_object()) return "";
  const auto it = obs.result->find(field);
  if (it == obs.result->end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) return (*it)[0].get<std::string>();
  return "";
}

}  // namespace

std::optional<Classification> RefusedAtLiveTarget(const ProbeDescriptor& probe,
                                                  std::span<const ArmView> controls,
                                                  const Observation& candidate,
                                                  const Classification& c) {
  if (!probe.classify.live_target) return std::nullopt;
  const LiveTargetRule& rule = *probe.classify.live_target;
  // Only a refusal the probe itself reported decides here: a canary that logged the candidate
  // is reach whatever the result says.
  if (c.exposure != Exposure::kExposed || !candidate.canary_hits.empty()) return std::nullopt;
  if (ResultField(candidate, "outcome") != rule.refused) return std::nullopt;
  const std::string target = OneAddress(candidate, rule.target);
  if (target.empty()) return std::nullopt;
  for (const ArmView& control : controls) {
    if (control.observation == nullptr) continue;
    const Observation& o = *control.observation;
    if (o.params_key != candidate.params_key || OneAddress(o, rule.target) != target) continue;
    const std::string outcome = ResultField(o, "outcome");
    const bool answered = std::ranges::find(rule.reached, outcome) != rule.reached.end();
    if (!answered && o.canary_hits.empty()) continue;
    const std::string err = ResultField(candidate, "errno");
    return Classification{
        Exposure::kContained, Evidence::kPositive, "refused (filtered)",
        fmt::format("outcome {}{} at {}, which control {} reached in this run ({}): a live "
                    "listener accepts, so what refused this sandbox stood in between (a "
                    "firewall's REJECT reads like a host's reset)",
                    rule.refused, err.empty() ? "" : " (" + Bounded(err, 100) + ")",
                    Bounded(target, 200), control.arm,
                    answered ? "outcome " + Bounded(outcome, 100) : std::string("canary hit"))};
  }
  return std::nullopt;
}

}  // namespace sandprobe::core
