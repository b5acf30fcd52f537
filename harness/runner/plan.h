// Planning a run: which probe runs in which arm with which parameters. Pure (no I/O), so the
// "identical parameters" rule and the skip rules are table-tested here.
#pragma once

#include <expected>
#include <map>
#include <string>
#include <vector>

#include "core/manifest.h"
#include "core/matrix.h"
#include "core/probe.h"
#include "core/suite.h"

namespace sandprobe::runner {

// One probe invocation to execute.
struct Task {
  size_t row = 0;     // index into the suite's entries / matrix rows
  std::string probe;  // probe id
  std::string arm;    // manifest name
  bool control = false;
  nlohmann::json params;   // resolved
  std::string params_key;  // core::ParamsKey(params)
  double deadline_s = 0;   // harness deadline, seconds
};

// A verdict decided before anything runs (SKIP: not applicable to the candidate's driver).
struct PlannedSkip {
  std::string probe;
  std::string candidate;
  std::string reason;
};

struct Plan {
  std::vector<core::Row> rows;
  std::vector<core::ArmInfo> arms;  // controls first, then candidates
  std::vector<Task> tasks;          // ordered row by row, so rows complete in suite order
  std::vector<PlannedSkip> skips;
};

struct Timing {
  double default_timeout_s = 10;  // when a candidate claims no timeout
  double grace_s = 5;             // added to the timeout for the harness deadline
};

// Errors: a suite entry naming an unknown probe, a parameter error, two arms with one name.
// Controls run each (probe, parameter set) that some candidate needs, once, with the longest
// deadline among those candidates; identical parameters are what makes a control count.
std::expected<Plan, std::string> PlanRun(const core::Suite& suite,
                                         const std::vector<core::ProbeDescriptor>& probes,
                                         const std::vector<core::Manifest>& candidates,
                                         const std::vector<core::Manifest>& controls,
                                         const std::map<std::string, std::string>& substitutions,
                                         const Timing& timing);

}  // namespace sandprobe::runner
