// Probe descriptor: what a probe is, which parameters it takes, and how its observations map to
// exposure. Loaded from probes/<category>/<name>/probe.yaml by config/; immutable afterwards.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/exposure.h"

namespace sandprobe::core {

// A parameter with a default, optionally sized from a limit the candidate claims
// (e.g. the balloon's target_mib = 2 x limits.memory, expressed in MiB).
struct ParamSpec {
  nlohmann::json default_value;
  std::string description;
  std::string from_limit;  // "" | "memory" | "tmp" | "pids" | "timeout" | "output"
  double factor = 1.0;     // multiplier applied to the limit
  std::string unit;        // unit of the parameter when sized from a limit: "MiB", "KiB", "B", "s"
};

// A claim check: the probe's own records show it went past what the candidate claims, e.g. the
// balloon's allocated_mib over the claimed memory limit (param claimed_mib, sized from
// limits.memory). Going past the claim is exposure, whatever ended the probe afterwards.
struct ExceedsRule {
  std::string field;  // numeric field of progress/result records, e.g. "allocated_mib"
  std::string param;  // resolved parameter holding the claim, e.g. "claimed_mib"; 0 = no claim
};

// A count the driver measures that decides the row when the probe's own result cannot, e.g.
// `survivors`: processes of the invocation still alive when its main process ended (filled by
// the process reaper, or derived from the container runtime). Applies when the result outcome is
// declared unknown (the probe defers to the harness) or there is no result.
struct FactRule {
  std::string fact;                          // numeric driver_facts key, e.g. "survivors"
  Exposure above_zero = Exposure::kExposed;  // fact > 0
  Exposure zero = Exposure::kContained;      // fact == 0
};

// Declared per probe: which result outcomes, endings and facts mean exposed or contained.
struct ClassifyRules {
  std::map<std::string, Exposure> outcomes;  // result record "outcome" -> exposure
  // Ended with no result record by SIGKILL / exit 137 or another fatal signal (an OOM kill looks
  // like this; so does timeout -s KILL: the reason says which facts were available).
  Exposure killed = Exposure::kUnknown;
  // Ended with no result record the way a timeout ends it: exit 124 (GNU timeout), exit 143 or
  // SIGTERM (busybox timeout, a polite stop). A timeout is not a memory or disk limit.
  Exposure timed_out = Exposure::kUnknown;
  Exposure deadline = Exposure::kUnknown;    // still running at the harness deadline
  Exposure canary_hit = Exposure::kExposed;  // the canary logged this invocation
  std::optional<ExceedsRule> exceeds;
  std::optional<FactRule> fact;
};

struct ProbeDescriptor {
  std::string id;        // stable dotted id, e.g. "net.dns"
  std::string label;     // matrix row label, e.g. "dns"
  std::string category;  // "net", "cred", "res", "fs", "platform", ...
  std::string description;
  bool requires_control = true;      // false: judged without a control (admission probes)
  std::vector<std::string> drivers;  // drivers it applies to; {"all"} for every driver
  std::map<std::string, ParamSpec> params;
  ClassifyRules classify;
  std::string script;       // probe.py body (the preamble is added at deployment)
  std::string source_path;  // where the descriptor was read from, for messages

  // True when the probe applies to the named driver.
  bool AppliesTo(const std::string& driver) const;
};

}  // namespace sandprobe::core
