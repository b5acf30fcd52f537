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

// The claim check: the largest value of rules.exceeds->field in any record, when it is over the
// claim held in the resolved parameter of that name (a claim of 0 or none is no claim).
std::optional<Classification> OverClaim(const ClassifyRules& rules, const Observation& obs) {
  if (!rules.exceeds) return std::nullopt;
  const auto claim_it = obs.params.find(rules.exceeds->param);
  if (claim_it == obs.params.end() || !claim_it->is_number()) return std::nullopt;
  const double claim = claim_it->get<double>();
  if (claim <= 0) return std::nullopt;
  double most = 0;
  auto consider = [&](const nlohmann::json& record) {
    const auto it = record.find(rules.exceeds->field);
    if (it != record.end() && it->is_number()) most = std::max(most, it->get<double>());
  };
  for (const nlohmann::json& r : obs.records) consider(r);
  if (obs.result) consider(*obs.result);
  if (most <= claim) return std::nullopt;
  return Classification{
      Exposure::kExposed, Evidence::kPositive, fmt::format("OVER CLAIM ({:g})", most),
      fmt::format("{} reached {:g}, over the claimed {:g} ({}): the claimed limit did not hold",
                  rules.exceeds->field, most, claim, rules.exceeds->param)};
}

// rules.fact, when the driver measured it: driver_facts[fact] (a number) with an optional
// driver_facts[fact + "_source"] naming where it came from.
std::optional<Classification> FromFact(const ClassifyRules& rules, const Observation& obs) {
  if (!rules.fact) return std::nullopt;
  const auto it = obs.driver_facts.find(rules.fact->fact);
  if (it == obs.driver_facts.end() || !it->is_number()) return std::nullopt;
  const double n = it->get<double>();
  const std::string source = StringField(obs.driver_facts, rules.fact->fact + "_source");
  const Exposure e = n > 0 ? rules.fact->above_zero : rules.fact->zero;
  std::string label = fmt::format("{} {:g}", rules.fact->fact, n);
  if (e == Exposure::kExposed) label = Upper(label);
  return Classification{e, e == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive, label,
                        fmt::format("driver fact {} = {:g}{}", rules.fact->fact, n,
                                    source.empty() ? "" : " (" + Bounded(source, 300) + ")")};
}

}  // namespace

KillKind KillKindOf(const Observation& obs) {
  if (obs.ending == Ending::kSignaled)
    return obs.signal == 15 ? KillKind::kTimeout : KillKind::kKill;
  if (obs.ending != Ending::kExited) return KillKind::kNone;
  if (obs.exit_code == 124 || obs.exit_code == 143) return KillKind::kTimeout;
  if (obs.exit_code == 137) return KillKind::kKill;
  return KillKind::kNone;
}

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
  std::optional<Classification> from_result;
  if (obs.result) from_result = FromResult(rules, *obs.result);
  // A declared exposed outcome is a leak whatever happened after it.
  if (from_result && from_result->exposure == Exposure::kExposed) return *from_result;
  if (auto over = OverClaim(rules, obs)) return *over;
  if (BoolField(obs.driver_facts, "oom_killed")) {
    return {rules.killed, Evidence::kPositive, "OOM killed",
            "driver fact: OOMKilled" + ProgressNote(obs)};
  }
  const bool started = std::ranges::any_of(
      obs.records, [](const nlohmann::json& r) { return StringField(r, "kind") == "start"; });
  // Only an invocation that ended by itself says what outlived it: one stopped at the deadline
  // was killed whole by the harness.
  const bool ended_itself = obs.ending == Ending::kExited || obs.ending == Ending::kSignaled;
  if (started && ended_itself && (!from_result || from_result->exposure == Exposure::kUnknown)) {
    if (auto fact = FromFact(rules, obs)) {
      if (from_result) fact->reason = from_result->reason + "; " + fact->reason;
      return *fact;
    }
  }
  if (from_result) return *from_result;
  // Endings only say something about a probe that was seen running: a "sandbox" that is killed
  // or hangs before the probe's start record may never have run the probe at all.
  if (!started && obs.ending != Ending::kExited) {
    return {Exposure::kUnknown, Evidence::kNone, "no start",
            fmt::format("{} after {:.1f}s with no start record: the probe may never have run",
                        obs.ending == Ending::kDeadline ? "hit the harness deadline"
                                                        : "killed (" + KillLabel(obs) + ")",
                        obs.duration_s)};
  }
  if (!started && KillKindOf(obs) != KillKind::kNone) {
    return {Exposure::kUnknown, Evidence::kNone, "no start",
            fmt::format("{} after {:.1f}s with no start record: the probe may never have run",
                        KillLabel(obs), obs.duration_s)};
  }
  if (obs.ending == Ending::kDeadline) {
    return {rules.deadline,
            rules.deadline == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive,
            rules.deadline == Exposure::kExposed ? "STILL RUNNING" : "deadline",
            fmt::format("still running at the harness deadline ({:.1f}s); the harness killed it{}",
                        obs.deadline_s, ProgressNote(obs))};
  }
  if (const KillKind kind = KillKindOf(obs); kind != KillKind::kNone) {
    const Exposure e = kind == KillKind::kTimeout ? rules.timed_out : rules.killed;
    return {e, e == Exposure::kUnknown ? Evidence::kNone : Evidence::kPositive, KillLabel(obs),
            fmt::format("ended by the sandbox after {:.1f}s ({}, {}) with no result record{}",
                        obs.duration_s, KillLabel(obs),
                        kind == KillKind::kTimeout
                            ? "the signature of a timeout"
                            : "a kill: an OOM kill looks like this, so does timeout -s KILL",
                        ProgressNote(obs))};
  }
  return {Exposure::kUnknown, Evidence::kNone, "no result",
          obs.ending == Ending::kExited
              ? fmt::format("exit {} without a result record", obs.exit_code)
              : fmt::format("{} without a result record", ToString(obs.ending))};
}

}  // namespace sandprobe::core
