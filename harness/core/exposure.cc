#include "core/exposure.h"

namespace sandprobe::core {

std::string_view ToString(Exposure e) {
  switch (e) {
    case Exposure::kExposed:
      return "exposed";
    case Exposure::kContained:
      return "contained";
    case Exposure::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view ToString(Evidence e) {
  switch (e) {
    case Evidence::kPositive:
      return "positive";
    case Evidence::kAbsence:
      return "absence";
    case Evidence::kSandboxWord:
      return "sandbox_word";
    case Evidence::kNone:
      return "none";
  }
  return "none";
}

std::optional<Exposure> ParseExposure(std::string_view s) {
  if (s == "exposed") return Exposure::kExposed;
  if (s == "contained") return Exposure::kContained;
  if (s == "unknown") return Exposure::kUnknown;
  return std::nullopt;
}

std::optional<Evidence> ParseEvidence(std::string_view s) {
  if (s == "positive") return Evidence::kPositive;
  if (s == "absence") return Evidence::kAbsence;
  if (s == "sandbox_word") return Evidence::kSandboxWord;
  if (s == "none") return Evidence::kNone;
  return std::nullopt;
}

}  // namespace sandprobe::core
