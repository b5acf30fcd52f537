#include "report/view.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/criteria.h"
#include "core/diff.h"
#include "core/trials.h"

namespace sandprobe::report {

Columns::Columns(std::vector<core::ArmInfo> arms) : arms_(std::move(arms)) {
  for (const core::ArmInfo& a : arms_) pointers_.push_back(&a);
}

Columns ColumnArms(const core::Matrix& m) {
  std::vector<std::string> families;  // of the candidates, in order; "" = none declared
  for (const core::ArmInfo& a : m.arms) {
    if (a.role == core::ArmRole::kCandidate &&
        std::ranges::find(families, a.ip_family) == families.end()) {
      families.push_back(a.ip_family);
    }
  }
  std::vector<core::ArmInfo> out;
  for (const core::ArmInfo* a : ListedArms(m)) {  // controls first, as listed
    if (a->role != core::ArmRole::kControl || families.size() < 2) {
      out.push_back(*a);
      continue;
    }
    for (const std::string& family : families) {
      out.push_back(*a);
      out.back().ip_family = family;
    }
  }
  return Columns(std::move(out));
}

std::vector<const core::ArmInfo*> ListedArms(const core::Matrix& m) {
  std::vector<const core::ArmInfo*> out;
  for (const core::ArmInfo& a : m.arms) {
    if (a.role == core::ArmRole::kControl) out.push_back(&a);
  }
  for (const core::ArmInfo& a : m.arms) {
    if (a.role != core::ArmRole::kControl) out.push_back(&a);
  }
  return out;
}

std::vector<const core::ArmInfo*> CandidateArms(const core::Matrix& m) {
  std::vector<const core::ArmInfo*> out;
  for (const core::ArmInfo& a : m.arms) {
    if (a.role == core::ArmRole::kCandidate) out.push_back(&a);
  }
  return out;
}

const core::Cell* ShownCell(const core::Matrix& m, std::string_view probe,
                            const core::ArmInfo& arm) {
  if (arm.role == core::ArmRole::kControl) {
    // The first candidate of the column's family; of any family when none has it (a control
    // shown once: its ip_family is its own, "").
    const auto candidates = CandidateArms(m);
    const bool of_family = std::ranges::any_of(
        candidates, [&](const core::ArmInfo* c) { return c->ip_family == arm.ip_family; });
    for (const core::ArmInfo* c : candidates) {
      if (of_family && c->ip_family != arm.ip_family) continue;
      const core::Cell* candidate = m.Find(probe, c->name);
      if (candidate == nullptr) continue;
      if (const core::Cell* match = m.Find(probe, arm.name, candidate->observation.params_key)) {
        return match;
      }
      break;
    }
    if (of_family && !arm.ip_family.empty()) {  // a family's column: a cell of that family only
      for (const core::Cell* c : CellsOf(m, probe, arm.name)) {
        if (c->observation.params.is_object() &&
            c->observation.params.value("ip_family", "") == arm.ip_family) {
          return c;
        }
      }
      return nullptr;
    }
  }
  return m.Find(probe, arm.name);
}

std::vector<const core::Cell*> CellsOf(const core::Matrix& m, std::string_view probe,
                                       std::string_view arm) {
  std::vector<const core::Cell*> out;
  for (const core::Cell& c : m.cells) {
    if (c.observation.probe == probe && c.observation.arm == arm) out.push_back(&c);
  }
  return out;
}

size_t VerdictCounts::Total() const {
  size_t total = missing + accepted;
  for (size_t n : by_kind) total += n;
  return total;
}

VerdictCounts CountVerdicts(const core::Matrix& m, std::string_view candidate) {
  VerdictCounts counts;
  for (const core::Row& row : m.rows) {
    const core::VerdictCell* v = m.FindVerdict(row.probe, candidate);
    if (v == nullptr) {
      ++counts.missing;
    } else if (v->Accepted()) {
      ++counts.accepted;
    } else {
      ++counts.by_kind[static_cast<size_t>(v->verdict.kind)];
      if (v->OnSandboxWord()) ++counts.on_sandbox_word;
    }
  }
  return counts;
}

std::string ShownVerdictText(const core::VerdictCell* v) {
  return v == nullptr ? "no verdict" : core::ShownVerdict(v);
}

bool OnSandboxWord(const core::VerdictCell* v) { return v != nullptr && v->OnSandboxWord(); }

std::string PassText(const VerdictCounts& counts) {
  if (counts.on_sandbox_word == 0) return "PASS";
  return fmt::format("PASS ({} {})", counts.on_sandbox_word, kSandboxWord);
}

std::string AcceptanceText(const core::VerdictCell& v) {
  if (!v.accepted) return "";
  const core::Acceptance& a = v.accepted.value();
  const std::string source = a.source.empty() ? "" : fmt::format(" ({})", a.source);
  if (a.expired) {
    return fmt::format("acceptance expired {} (FAIL again): {}{}", a.expires, a.reason, source);
  }
  return fmt::format("accepted until {}: {}{}", a.expires, a.reason, source);
}

std::string FlakyText(const core::Cell& cell) {
  return core::Flaky(cell) ? "flaky: " + core::TrialCounts(cell) : "";
}

std::string TrialsText(const core::Cell& cell) {
  if (cell.trials.empty()) return "";
  if (core::Flaky(cell)) return fmt::format("{} trials, {}", cell.trials.size(), FlakyText(cell));
  return fmt::format("{} trials, all {}", cell.trials.size(), cell.trials.front().label);
}

std::vector<CandidateChecklist> Checklist(const core::Matrix& m) {
  std::vector<CandidateChecklist> out;
  const auto judged = core::JudgeCriteria(m);  // [criterion][candidate]
  const auto candidates = CandidateArms(m);
  for (size_t j = 0; j < candidates.size() && !judged.empty(); ++j) {
    CandidateChecklist& list = out.emplace_back();
    list.candidate = candidates[j];
    for (size_t i = 0; i < judged.size(); ++i) {
      const core::CriterionResult& r = judged[i][j];
      ChecklistItem& item = list.items.emplace_back();
      item.criterion = &m.criteria[i];
      item.holds = r.holds;
      if (r.holds) ++list.holding;
      for (const core::CriterionBreak& b : r.broken) {
        BrokenRow& row = item.broken.emplace_back();
        row.probe = b.probe;
        const auto found = std::ranges::find(m.rows, b.probe, &core::Row::probe);
        row.label = found != m.rows.end() ? found->label : b.probe;
        row.level = found != m.rows.end() ? found->level : core::Level::kRequired;
        if (b.verdict) {
          row.verdict = core::ToString(*b.verdict);
          const core::VerdictCell* v = m.FindVerdict(b.probe, r.candidate);
          row.reason = v != nullptr ? v->verdict.reason : "";
        } else {
          row.verdict = "MISSING";
          row.reason = m.interrupted ? "no verdict: the run was interrupted before this row ended"
                                     : "no verdict: the row is missing from the run";
        }
      }
    }
  }
  return out;
}

std::string BrokenRowText(const BrokenRow& row) {
  return fmt::format("{} ({}) {}{}", row.label, row.probe, row.verdict,
                     row.level == core::Level::kAdvisory ? " (advisory)" : "");
}

std::string_view ExitCodeMeaning(int code) {
  switch (code) {
    case 0:
      return "every required probe PASS or SKIP";
    case 1:
      return "at least one required probe FAIL";
    case 2:
      return "no FAIL, but a required probe INCONCLUSIVE or ERROR, or the run was interrupted";
    default:
      return "setup error";
  }
}

std::string CompactJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string FieldText(const nlohmann::json& record, std::string_view key) {
  if (!record.is_object()) return "";
  const auto it = record.find(key);
  if (it == record.end() || it->is_null()) return "";
  if (it->is_string()) return it->get_ref<const std::string&>();
  return CompactJson(*it);
}

std::string EndingText(const core::Observation& obs) {
  const std::string after = fmt::format("after {:.3f} s", obs.duration_s);
  switch (obs.ending) {
    case core::Ending::kExited:
      return fmt::format("exited with code {} {} (deadline {:.3f} s)", obs.exit_code, after,
                         obs.deadline_s);
    case core::Ending::kSignaled:
      return fmt::format("killed by signal {} {} (deadline {:.3f} s)", obs.signal, after,
                         obs.deadline_s);
    case core::Ending::kDeadline:
      return fmt::format("still running at the {:.3f} s deadline; the harness killed it {}",
                         obs.deadline_s, after);
    case core::Ending::kInterrupted:
      return "run interrupted " + after;
    case core::Ending::kHarnessError:
      return "harness error " + after;
    case core::Ending::kNotRun:
      return "not run";
  }
  return "not run";
}

namespace {

std::string ResultText(const core::Observation& obs) {
  if (!obs.result) return "none";
  std::string text = "outcome " + FieldText(*obs.result, "outcome");
  if (const std::string err = FieldText(*obs.result, "errno"); !err.empty()) {
    text += ", errno " + err;
  }
  if (const std::string detail = FieldText(*obs.result, "detail"); !detail.empty()) {
    text += ": " + detail;
  }
  return text;
}

std::string_view EvidenceText(core::Evidence e) {
  switch (e) {
    case core::Evidence::kPositive:
      return "positive evidence";
    case core::Evidence::kAbsence:
      return "absence evidence only";
    case core::Evidence::kSandboxWord:
      return "on the sandbox's word only";
    case core::Evidence::kNone:
      return "no evidence";
  }
  return "no evidence";
}

std::string CanaryText(const core::Observation& obs) {
  if (obs.canary_hits.empty()) return "none";
  constexpr size_t kShown = 5;
  std::string text;
  for (size_t i = 0; i < obs.canary_hits.size() && i < kShown; ++i) {
    const core::CanaryHit& h = obs.canary_hits[i];
    if (!text.empty()) text += "; ";
    text += fmt::format("{} from {}: {}", h.kind, h.peer, h.detail);
  }
  if (obs.canary_hits.size() > kShown) {
    text += fmt::format("; +{} more", obs.canary_hits.size() - kShown);
  }
  return text;
}

}  // namespace

std::vector<Fact> EvidenceFacts(const core::Cell& cell, const core::VerdictCell* verdict) {
  const core::Observation& obs = cell.observation;
  const core::Classification& cls = cell.classification;
  std::vector<Fact> facts;
  if (verdict != nullptr) {
    facts.push_back({"verdict", fmt::format("{}: {}", core::ToString(verdict->verdict.kind),
                                            verdict->verdict.reason)});
    if (verdict->accepted) facts.push_back({"expectation", AcceptanceText(*verdict)});
    facts.push_back({"validated by", verdict->verdict.validated_by.empty()
                                         ? "none"
                                         : verdict->verdict.validated_by});
  }
  if (!cell.trials.empty()) facts.push_back({"trials", TrialsText(cell)});
  facts.push_back({"classification", fmt::format("{}: {}", cls.label, cls.reason)});
  facts.push_back({"exposure", fmt::format("{} ({})", core::ToString(cls.exposure),
                                           EvidenceText(cls.evidence))});
  facts.push_back({"ending", EndingText(obs)});
  if (!obs.harness_error.empty()) facts.push_back({"harness error", obs.harness_error});
  facts.push_back({"result", ResultText(obs)});
  if (const nlohmann::json* p = obs.LastProgress()) {
    facts.push_back({"last progress", CompactJson(*p)});
  }
  facts.push_back(
      {"records", fmt::format("{} kept, {} dropped, {} foreign lines ignored", obs.records.size(),
                              obs.dropped_records, obs.foreign_lines)});
  facts.push_back({"canary hits", CanaryText(obs)});
  if (const nlohmann::json shown = obs.ReportedFacts(); !shown.empty()) {
    facts.push_back({"driver facts", CompactJson(shown)});
  }
  facts.push_back({"params", CompactJson(obs.params)});
  facts.push_back({"output", fmt::format("stdout {} bytes, stderr {} bytes", obs.stdout_bytes,
                                         obs.stderr_bytes)});
  return facts;
}

}  // namespace sandprobe::report
