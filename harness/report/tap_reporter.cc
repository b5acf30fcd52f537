// report.tap: TAP version 14 (testanything.org/tap-version-14-specification.html) for TAP
// consumers (node-tap, runtime-tools, netassert users). One commented subtest per candidate arm,
// one test point per probe in it; control cells are evidence, not test points (they carry no
// verdict), and appear in the diagnostics of each candidate point. Every untrusted string goes
// through TapText (descriptions, reasons, comments) or YamlQuoted (diagnostics); see escape.h.
#include <fmt/format.h>

#include "report/escape.h"
#include "report/reporters.h"
#include "report/text_clean.h"
#include "report/view.h"

namespace sandprobe::report {
namespace {

constexpr size_t kNameBytes = 256;
constexpr size_t kReasonBytes = 1024;
constexpr size_t kFactBytes = 512;
constexpr size_t kExcerptBytes = 1024;  // raw stdout/stderr excerpt per stream

class TapWriter {
 public:
  // A whole line at `indent` spaces; `line` is already escaped or fixed text.
  void Line(size_t indent, std::string_view line) {
    out_.append(indent, ' ');
    out_ += line;
    out_ += '\n';
  }
  // A comment line: '#' and fixed text, then untrusted text on one line.
  void Comment(size_t indent, std::string_view key, std::string_view raw, size_t max_bytes) {
    Line(indent, fmt::format("# {}{}", key, OneLine(BoundedText(raw, max_bytes))));
  }
  // "key: value" in a YAML block; `key` is fixed text (a plain scalar: letters and spaces),
  // `raw` untrusted.
  void Yaml(size_t indent, std::string_view key, std::string_view raw, size_t max_bytes) {
    Line(indent, fmt::format("{}: {}", key, YamlQuoted(raw, max_bytes)));
  }
  // "key: value" with a fixed (trusted) plain scalar value.
  void YamlPlain(size_t indent, std::string_view key, std::string_view value) {
    Line(indent, fmt::format("{}: {}", key, value));
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

bool Gates(const core::Row& row) { return row.level == core::Level::kRequired; }

// ok for PASS and SKIP; everything else (FAIL, INCONCLUSIVE, ERROR, no verdict) is not ok, as the
// gate counts it (docs/design.md "Exit codes").
bool IsOk(const core::VerdictCell* v) {
  return v != nullptr && (v->verdict.kind == core::VerdictKind::kPass ||
                          v->verdict.kind == core::VerdictKind::kSkip);
}

void WriteFacts(TapWriter& w, size_t indent, const core::Cell& cell) {
  for (const Fact& fact : EvidenceFacts(cell, nullptr)) {
    w.Yaml(indent, fact.key, fact.value, kFactBytes);
  }
  const core::Observation& obs = cell.observation;
  // Raw stdout repeats the records above when a result came back and nothing was odd (as in
  // matrix.md); it is kept where it is the evidence. report.json has every excerpt.
  const bool stdout_is_evidence = !obs.result || obs.foreign_lines > 0 || obs.dropped_records > 0;
  if (stdout_is_evidence && !obs.stdout_head.empty()) {
    w.Yaml(indent, "stdout excerpt", obs.stdout_head, kExcerptBytes);
  }
  if (!obs.stderr_head.empty()) w.Yaml(indent, "stderr excerpt", obs.stderr_head, kExcerptBytes);
}

void WriteTestPoint(TapWriter& w, const core::Matrix& m, const core::ArmInfo& arm,
                    const core::Row& row, size_t id) {
  constexpr size_t kIndent = 4;  // inside the arm's subtest
  const core::VerdictCell* v = m.FindVerdict(row.probe, arm.name);
  const bool ok = IsOk(v);
  std::string line = fmt::format("{} {} - {}", ok ? "ok" : "not ok", id,
                                 TapText(row.probe + ": " + row.label, kNameBytes * 2));
  if (OnSandboxWord(v)) line += fmt::format(" (PASS {})", kSandboxWord);
  if (v != nullptr && v->verdict.kind == core::VerdictKind::kSkip) {
    line += " # SKIP " + TapText(v->verdict.reason, kReasonBytes);
  } else if (v != nullptr && v->Accepted()) {
    // A known FAIL accepted by --expect: still not ok, and not a failure of the gate (TODO).
    line += " # TODO " + TapText(AcceptanceText(*v), kReasonBytes);
  } else if (!ok && !Gates(row)) {
    // Advisory rows never change the exit code; TODO is TAP's "not ok, and not a failure".
    line += fmt::format(" # TODO advisory row, does not gate: {}",
                        v ? core::ToString(v->verdict.kind) : "no verdict");
  }
  w.Line(kIndent, line);
  const size_t y = kIndent + 2;
  w.Line(y, "---");
  w.YamlPlain(y, "verdict", v ? ShownVerdictText(v) : "none");
  if (v != nullptr && v->accepted) w.Yaml(y, "acceptance", AcceptanceText(*v), kReasonBytes);
  w.YamlPlain(y, "level", core::ToString(row.level));
  w.Yaml(y, "probe", row.probe, kNameBytes);
  w.Yaml(y, "label", row.label, kNameBytes);
  w.Yaml(y, "candidate", arm.name, kNameBytes);
  w.Yaml(y, "reason", v ? v->verdict.reason : "no verdict recorded (interrupted run?)",
         kReasonBytes);
  if (v != nullptr) {
    w.Yaml(y, "validated by", v->verdict.validated_by, kNameBytes);
    w.YamlPlain(y, "evidence kind", core::ToString(v->verdict.evidence));
    if (v->OnSandboxWord()) w.Yaml(y, "on the sandbox word", kSandboxWordRule, kReasonBytes);
  }
  if (const core::Cell* cell = m.Find(row.probe, arm.name)) {
    w.Line(y, "observation:");
    WriteFacts(w, y + 2, *cell);
  } else {
    w.YamlPlain(y, "observation", "null");
  }
  // Each control's cell that ran what this candidate sent (its params_key, the family included).
  const core::Cell* own = m.Find(row.probe, arm.name);
  bool controls = false;
  for (const core::ArmInfo* control : ListedArms(m)) {
    if (control->role != core::ArmRole::kControl) continue;
    const core::Cell* cell =
        own != nullptr ? m.Find(row.probe, control->name, own->observation.params_key) : nullptr;
    if (cell == nullptr) cell = ShownCell(m, row.probe, *control);
    if (cell == nullptr) continue;
    if (!controls) w.Line(y, "controls:");
    controls = true;
    w.Line(y + 2, "- arm: " + YamlQuoted(control->name, kNameBytes));
    WriteFacts(w, y + 4, *cell);
  }
  w.Line(y, "...");
}

void WriteArm(TapWriter& w, const core::Matrix& m, const core::ArmInfo& arm, size_t id) {
  const std::string name = TapText(arm.name, kNameBytes);
  w.Line(0, "# Subtest: " + name);
  if (m.rows.empty()) {
    w.Line(4, "1..0 # the suite has no rows");
  } else {
    w.Line(4, fmt::format("1..{}", m.rows.size()));
  }
  bool gate_ok = true;
  for (size_t i = 0; i < m.rows.size(); ++i) {
    WriteTestPoint(w, m, arm, m.rows[i], i + 1);
    const core::VerdictCell* v = m.FindVerdict(m.rows[i].probe, arm.name);
    if (Gates(m.rows[i]) && !IsOk(v) && !(v != nullptr && v->Accepted())) gate_ok = false;
  }
  w.Line(0, fmt::format("{} {} - {}", gate_ok ? "ok" : "not ok", id, name));
  w.Line(2, "---");
  w.Yaml(2, "candidate", arm.name, kNameBytes);
  w.Yaml(2, "driver", arm.driver, kNameBytes);
  w.Yaml(2, "control", arm.control, kNameBytes);
  const VerdictCounts counts = CountVerdicts(m, arm.name);
  for (const core::VerdictKind k : kVerdictOrder) {
    w.YamlPlain(2, core::ToString(k), std::to_string(counts.Of(k)));
    if (k == core::VerdictKind::kPass) {  // of those, on the sandbox's word only
      w.YamlPlain(2, "PASS on the sandbox word", std::to_string(counts.on_sandbox_word));
    }
  }
  w.YamlPlain(2, "ACCEPTED", std::to_string(counts.accepted));
  w.YamlPlain(2, "without verdict", std::to_string(counts.missing));
  if (!arm.weakens.empty()) {
    w.Line(2, "weakens:");
    for (const std::string& weakens : arm.weakens) {
      w.Line(4, "- " + YamlQuoted(weakens, kReasonBytes));
    }
  }
  w.Line(2, "...");
}

}  // namespace

std::string RenderTap(const core::Matrix& m) {
  TapWriter w;
  w.Line(0, "TAP version 14");
  w.Comment(0, "sandprobe run ", m.run_id, kNameBytes);
  w.Comment(0, "suite: ", m.suite, kNameBytes);
  w.Comment(0, "started: ", m.started_at + ", finished: " + m.finished_at, kNameBytes);
  for (const std::string& banner : m.banners) w.Comment(0, "BANNER: ", banner, kReasonBytes);
  for (const core::ArmInfo* arm : ListedArms(m)) {
    if (arm->role == core::ArmRole::kControl) {
      w.Comment(0, "control arm (evidence, not judged): ", arm->name + ", driver " + arm->driver,
                kNameBytes * 2);
    }
    for (const std::string& weakens : arm->weakens) {
      w.Comment(0, "weakened isolation: ", arm->name + ": " + weakens, kReasonBytes);
    }
  }
  for (const std::string& note : m.notes) w.Comment(0, "note: ", note, kReasonBytes);
  // The acceptance checklist (suite criteria:), as comments before the plan.
  for (const CandidateChecklist& list : Checklist(m)) {
    w.Comment(0, "acceptance criteria: ",
              fmt::format("{}: {} of {} hold ({})", list.candidate->name, list.holding,
                          list.items.size(), kChecklistRule),
              kReasonBytes);
    for (const ChecklistItem& item : list.items) {
      std::string text = (item.holds ? "[holds] " : "[BROKEN] ") + item.criterion->name;
      for (size_t i = 0; i < item.broken.size(); ++i) {
        text += (i == 0 ? " -- broken by: " : ", ") + BrokenRowText(item.broken[i]);
      }
      w.Comment(0, "  ", text, kReasonBytes * 2);
    }
  }
  const auto candidates = CandidateArms(m);
  if (candidates.empty()) {
    w.Line(0, "1..0 # no candidate arm");
  } else {
    w.Line(0, fmt::format("1..{}", candidates.size()));
  }
  for (size_t i = 0; i < candidates.size(); ++i) WriteArm(w, m, *candidates[i], i + 1);
  const int code = core::RunExitCode(m);
  w.Line(0, fmt::format("# exit code {}: {}", code, ExitCodeMeaning(code)));
  // An interrupted run is not a green gate even where every measured row passed.
  if (m.interrupted) w.Line(0, "Bail out! run interrupted before every probe ended");
  return w.str();
}

}  // namespace sandprobe::report
