// A sandbox manifest: which driver deploys probes and with what isolation settings, in the
// driver's own vocabulary. One manifest is one arm of a run (a candidate or a control).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/limits.h"

namespace sandprobe::core {

enum class ArmRole { kControl, kCandidate };
std::string_view ToString(ArmRole r);  // "control" | "candidate"

struct Manifest {
  std::string name;         // arm name shown as the matrix column
  std::string driver;       // a kind in the driver registry (drivers/registry.cc)
  std::string control;      // name or path of the control manifest ("" = none declared)
  std::string description;  // one line for reports
  Limits limits;            // what the candidate claims
  // Options that weaken isolation, declared by the manifest author; shown in every report.
  std::vector<std::string> weakens;
  nlohmann::json driver_config = nlohmann::json::object();  // the `<driver>:` section, verbatim
  std::string source_path;  // file it was read from ("<embedded>" for built-ins)
};

}  // namespace sandprobe::core
