// A sandbox manifest: which driver deploys probes and with what isolation settings, in the
// driver's own vocabulary. One manifest is one arm of a run (a candidate or a control).
#pragma once

#include <any>
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
  // The `<driver>:` section as its kind read it, once, when the manifest was loaded: the kind's
  // typed configuration (CommandConfig for command and local, HttpConfig, kube::KubeSettings; for
  // docker the section as JSON, the Engine API's own vocabulary). Empty when the manifest has no
  // section and its kind needs none. Only the kind reads it back (drivers/registry.h, SectionOf).
  std::any section;
  std::string source_path;  // file it was read from ("<embedded>" for built-ins)
};

}  // namespace sandprobe::core
