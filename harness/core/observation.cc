#include "core/observation.h"

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

}  // namespace sandprobe::core
