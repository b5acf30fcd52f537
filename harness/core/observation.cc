#include "core/observation.h"

#include "core/facts.h"
#include "core/json_field.h"

namespace sandprobe::core {

std::string_view ToString(Ending e) {
  switch (e) {
    case Ending::kExited:
      return "exited";
    case Ending::kSignaled:
      return "signaled";
    case Ending::kDeadline:
      return "deadline";
    case Ending::kInterrupted:
      return "interrupted";
    case Ending::kHarnessError:
      return "harness_error";
    case Ending::kNotRun:
      return "not_run";
  }
  return "not_run";
}

const nlohmann::json* Observation::LastProgress() const {
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (StringField(*it, "kind") == "progress") return &*it;
  }
  return nullptr;
}

nlohmann::json Observation::ReportedFacts() const {
  if (!driver_facts.is_object()) return driver_facts;  // as a report read back carried it
  nlohmann::json facts = driver_facts;
  if (!not_judged.empty()) facts[fact::kNotJudged] = not_judged;
  if (canary_not_planted) facts[fact::kCanaryNotPlanted] = true;
  return facts;
}

void Observation::SetReportedFacts(nlohmann::json facts) {
  driver_facts = std::move(facts);
  if (!driver_facts.is_object()) return;
  // Only the shapes ReportedFacts writes are taken out, so any report re-renders as it was.
  if (auto it = driver_facts.find(fact::kNotJudged);
      it != driver_facts.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
    not_judged = it->get<std::string>();
    driver_facts.erase(it);
  }
  if (auto it = driver_facts.find(fact::kCanaryNotPlanted);
      it != driver_facts.end() && *it == true) {
    canary_not_planted = true;
    driver_facts.erase(it);
  }
}

}  // namespace sandprobe::core
