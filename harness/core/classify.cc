#include "core/classify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/json_field.h"
#include "core/text.h"

namespace sandprobe::core {
namespace {

std::string Upper(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// Cell text for a declared outcome: exposed outcomes shout, contained ones do not.
std::string OutcomeLabel(const std::string& outcome, Exposure e) {
  std::string text = outcome;
  std::ranges::replace(text, '_', ' ');
  return e == Exposure::kExposed ? Upper(text) : text;
}

std::string KillLabel(const Observation& obs) {
  if (obs.ending == Ending::kSignaled) return fmt::format("killed (signal {})", obs.signal);
  return fmt::format("exit {}", obs.exit_code);
}

std::string ProgressNote(const Observation& obs) {
  const nlohmann::json* p = obs.LastProgress();
  if (p == nullptr) return "";
  nlohmann::json copy = *p;
  for (const char* k : {"kind", "probe", "seq"}) copy.erase(k);
  return fmt::format("; last progress {}",
                     copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Classification FromResult(const ClassifyRules& rules, const nlohmann::json& result) {
  const std::string outcome = StringField(result, "outcome");
  auto it = rules.outcomes.find(outcome);
  if (it == rules.outcomes.end()) {
    return {Exposure::kUnknown, Evidence::kNone, "unparsed",
            fmt::format("result outcome '{}' is not declared by the probe", Bounded(outcome, 300))};
  }
  Evidence ev = Evidence::kAbsence;
  if (auto parsed = ParseEvidence(StringField(result, "evidence"))) ev = *parsed;
  if (it->second == Exposure::kUnknown) ev = Evidence::kNone;
  std::string reason = fmt::format("outcome {}", outcome);
  const std::string err = StringField(result, "errno");
  if (!err.empty()) reason += fmt::format(" ({})", Bounded(err, 300));
  const std::string detail = StringField(result, "detail");
  if (!detail.empty()) reason += ": " + Bounded(detail, 300);
  return {it->second, ev, OutcomeLabel(outcome, it->second), reason};
}

}  // namespace

bool IsKillExitCode(int code) { return code == 124 || code == 137 || code == 143; }

Classification Classify(const ProbeDescriptor& probe, const Observation& obs) {
  const ClassifyRules& rules = probe.classify;
  switch (obs.ending) {
    case Ending::kHarnessError:
      return {Exposure::kUnknown, Evidence::kNone, "error", "harness error: " + obs.harness_error};
    case Ending::kInterrupted:
      return {Exposure::kUnknown, Evidence::kNone, "interrupted", "run interrupted before the end"};
    case Ending::kNotRun:
      return {Exposure::kUnknown, Evidence::kNone, "not run", "probe was not run"};
    default:
      break;
  }
  if (!obs.canary_hits.empty()) {
    const CanaryHit& hit = obs.canary_hits.front();
    return {rules.canary_hit, Evidence::kPositive,
            rules.canary_hit == Exposure::kExposed ? "REACHED" : "canary hit",
            fmt::format("{} canary logged this invocation from {} ({} hit(s))", hit.kind, hit.peer,
                        obs.canary_hits.size())};
  }
  const bool ended_by_kill = obs.ending == Ending::kSignaled ||
                             (obs.ending == Ending::kExited && IsKillExitCode(obs.exit_code));
  std::optional<Classification> from_result;
  if (obs.result) from_result = FromResult(rules, *obs.result);
  // A declared exposed outcome is a leak whatever happened after it.
  if (from_result && from_result->exposure == Exposure::kExposed) return *from_result;
  if (BoolField(obs.driver_facts, "oom_killed")) {
    return {rules.killed, Evidence::kPositive, "OOM killed",
            "driver fact: OOMKilled" + ProgressNote(obs)};
  }
  if (from_result) return *from_result;
  if (obs.ending == Ending::kDeadline) {
    return {rules.deadline,
            rules.deadline == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive,
            rules.deadline == Exposure::kExposed ? "STILL RUNNING" : "deadline",
            fmt::format("still running at the harness deadline ({:.1f}s); the harness killed it{}",
                        obs.deadline_s, ProgressNote(obs))};
  }
  if (ended_by_kill) {
    return {rules.killed,
            rules.killed == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive,
            KillLabel(obs),
            fmt::format("ended by the sandbox after {:.1f}s ({}) with no result record{}",
                        obs.duration_s, KillLabel(obs), ProgressNote(obs))};
  }
  return {Exposure::kUnknown, Evidence::kNone, "no result",
          obs.ending == Ending::kExited
              ? fmt::format("exit {} without a result record", obs.exit_code)
              : fmt::format("{} without a result record", ToString(obs.ending))};
}

}  // namespace sandprobe::core
