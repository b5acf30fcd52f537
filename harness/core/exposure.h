// Exposure and evidence: how one observation is classified, before any verdict is made.
// Pure value types; see docs/design.md "Verdict rules".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sandprobe::core {

// What one observation says about the exposure the probe looks for.
enum class Exposure { kExposed, kContained, kUnknown };

// How strong the evidence behind a classification is. kPositive is direct proof (EROFS,
// ENETUNREACH, one interface, the canary's nonce echoed, a driver fact); kAbsence only says that
// something did not happen (a timeout, a canary that heard nothing); kSandboxWord is a containment
// read from how the sandbox itself says the call ended (a run-code service's "exit 124" or "timed
// out"; a stop that no survivors count and no heartbeat could confirm) with nothing the harness
// measured behind it: a PASS on it is shown and counted as "on the sandbox's word" in every report
// (docs/design.md, "Verdict rules"); kNone means there is no evidence at all.
enum class Evidence { kPositive, kAbsence, kSandboxWord, kNone };

std::string_view ToString(Exposure e);  // "exposed" | "contained" | "unknown"
std::string_view ToString(Evidence e);  // "positive" | "absence" | "sandbox_word" | "none"
std::optional<Exposure> ParseExposure(std::string_view s);
std::optional<Evidence> ParseEvidence(std::string_view s);

// One observation classified: the exposure, the kind of evidence, the matrix cell text and a
// one-line reason a human can check against the evidence.
struct Classification {
  Exposure exposure = Exposure::kUnknown;
  Evidence evidence = Evidence::kNone;
  std::string label;   // matrix cell, e.g. "REACHED", "blocked", "exit 124", "1 (lo)"
  std::string reason;  // e.g. "canary echoed the nonce", "EROFS on /"
};

}  // namespace sandprobe::core
