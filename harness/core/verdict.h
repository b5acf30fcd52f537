// Verdicts and judge(): the only place a verdict is made. See docs/design.md "Verdict rules".
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/exposure.h"
#include "core/observation.h"
#include "core/probe.h"

namespace sandprobe::core {

enum class VerdictKind { kPass, kFail, kInconclusive, kSkip, kError };
std::string_view ToString(VerdictKind v);  // "PASS" | "FAIL" | "INCONCLUSIVE" | "SKIP" | "ERROR"

struct Verdict {
  VerdictKind kind = VerdictKind::kInconclusive;
  std::string reason;        // one line, names the evidence or what is missing
  std::string validated_by;  // the control arm that showed exposure ("" if none / not needed)
  Evidence evidence = Evidence::kNone;  // strength of the candidate's evidence
};

// One arm's view of a probe: its observation and that observation's classification.
struct ArmView {
  std::string arm;
  const Observation* observation = nullptr;  // never null when passed to Judge
  Classification classification;
};

// Applicability of the probe to the candidate's driver; the runner decides, judge reports.
struct Applicability {
  bool applies = true;
  std::string reason;  // why not, e.g. "Kubernetes-only probe on driver command"
};

// Rules, in order:
//  6. not applicable                                   -> SKIP (reason)
//  5. the candidate's harness/driver failed            -> ERROR
//  1. candidate exposed                                -> FAIL (a leak is a leak)
//  4. candidate unknown (no record, interrupted, ...)  -> INCONCLUSIVE
//  2. no control with identical params_key exposed     -> INCONCLUSIVE (unless the probe
//                                                         declares requires_control: false)
//  3. candidate contained                              -> PASS (reason names evidence kind and
//                                                         the validating control; a PASS on
//                                                         Evidence::kSandboxWord says "on the
//                                                         sandbox's word only")
Verdict Judge(const ProbeDescriptor& probe, std::span<const ArmView> controls,
              const ArmView& candidate, const Applicability& applicability = {});

}  // namespace sandprobe::core
