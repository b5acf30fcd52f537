#include "core/verdict.h"

#include <fmt/format.h>

namespace sandprobe::core {

std::string_view ToString(VerdictKind v) {
  switch (v) {
    case VerdictKind::kPass:
      return "PASS";
    case VerdictKind::kFail:
      return "FAIL";
    case VerdictKind::kInconclusive:
      return "INCONCLUSIVE";
    case VerdictKind::kSkip:
      return "SKIP";
    case VerdictKind::kError:
      return "ERROR";
  }
  return "INCONCLUSIVE";
}

Verdict Judge(const ProbeDescriptor& probe, std::span<const ArmView> controls,
              const ArmView& candidate, const Applicability& applicability) {
  if (!applicability.applies) {
    return {VerdictKind::kSkip, applicability.reason, "", Evidence::kNone};
  }
  const Observation& obs = *candidate.observation;
  const Classification& cls = candidate.classification;
  if (obs.ending == Ending::kHarnessError) {
    return {VerdictKind::kError, "harness/driver failed: " + obs.harness_error, "",
            Evidence::kNone};
  }
  if (cls.exposure == Exposure::kExposed) {
    return {VerdictKind::kFail, "candidate exposed: " + cls.reason, "", cls.evidence};
  }
  if (cls.exposure == Exposure::kUnknown) {
    return {VerdictKind::kInconclusive, "no evidence from the candidate: " + cls.reason, "",
            Evidence::kNone};
  }
  // Contained: only meaningful if some control showed the probe can detect the exposure here.
  std::string validated_by;
  std::string control_notes;
  for (const ArmView& c : controls) {
    if (c.observation == nullptr) continue;
    if (c.observation->params_key != obs.params_key) continue;  // identical parameters only
    if (c.classification.exposure == Exposure::kExposed) {
      validated_by = c.arm;
      break;
    }
    if (!control_notes.empty()) control_notes += "; ";
    control_notes += fmt::format("{}: {}", c.arm, c.classification.reason);
  }
  if (probe.requires_control && validated_by.empty()) {
    return {VerdictKind::kInconclusive,
            control_notes.empty()
                ? "no control arm ran this probe with identical parameters"
                : "no control arm showed exposure, so the probe could not show it detects this "
                  "here (" +
                      control_notes + ")",
            "", cls.evidence};
  }
  std::string_view evidence_note = "absence evidence only (nothing got through)";
  if (cls.evidence == Evidence::kPositive) evidence_note = "positive evidence";
  if (cls.evidence == Evidence::kSandboxWord) {
    evidence_note = "on the sandbox's word only";
  }
  std::string reason = fmt::format("contained, {}: {}", evidence_note, cls.reason);
  if (!validated_by.empty()) reason += fmt::format("; control {} was exposed", validated_by);
  if (!probe.requires_control) reason += "; probe needs no control";
  return {VerdictKind::kPass, reason, validated_by, cls.evidence};
}

}  // namespace sandprobe::core
