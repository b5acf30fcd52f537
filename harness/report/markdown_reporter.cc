// matrix.md: the acceptance evidence pasted on a ticket. Every untrusted string goes through
// MarkdownWriter (escape.h); this file writes only its own fixed markup.
#include <fmt/format.h>

#include "report/escape.h"
#include "report/reporters.h"
#include "report/view.h"

namespace sandprobe::report {
namespace {

constexpr size_t kCellBytes = 120;      // a table cell or a name
constexpr size_t kFactBytes = 1024;     // one evidence fact
constexpr size_t kExcerptBytes = 2048;  // raw stdout/stderr excerpt per stream

// The acceptance checklist, first thing under the title. Emoji marks rather than "- [ ]" task
// items: a tracker renders those as checkboxes that a reader could tick by hand.
void WriteChecklist(MarkdownWriter& w, const core::Matrix& m) {
  const auto checklist = Checklist(m);
  if (checklist.empty()) return;
  w.Markup("## Acceptance criteria\n\n").Markup("A criterion holds only when every row in it ");
  w.Markup("PASSes; the rows that broke one are named.\n\n");
  for (const CandidateChecklist& list : checklist) {
    w.Markup("**").Text(list.candidate->name, kCellBytes).Markup("**: ");
    w.Markup(fmt::format("{} of {} criteria hold\n\n", list.holding, list.items.size()));
    for (const ChecklistItem& item : list.items) {
      w.Markup(item.holds ? "- ✅ " : "- ❌ ").Text(item.criterion->name, kFactBytes);
      if (item.holds) {
        w.Markup(" — holds\n");
        continue;
      }
      w.Markup(" — **broken by:** ");
      for (size_t i = 0; i < item.broken.size(); ++i) {
        const BrokenRow& row = item.broken[i];
        w.Markup(i == 0 ? "" : ", ").Text(row.label, kCellBytes).Markup(" (");
        w.Text(row.probe, kCellBytes).Markup(") **").Markup(row.verdict).Markup("**");
        if (row.level == core::Level::kAdvisory) w.Markup(" *(advisory)*");
      }
      w.Markup("\n");
    }
    w.Markup("\n");
  }
}

void WriteHeader(MarkdownWriter& w, const core::Matrix& m) {
  w.Markup("# sandprobe run ").Text(m.run_id, kCellBytes).Markup("\n\n");
  WriteChecklist(w, m);
  for (const std::string& banner : m.banners)
    w.Markup("> **").Text(banner, kFactBytes).Markup("**\n\n");
  w.Markup("- suite: ").Text(m.suite, kCellBytes).Markup("\n");
  w.Markup("- started: ").Text(m.started_at, kCellBytes);
  w.Markup(", finished: ").Text(m.finished_at, kCellBytes).Markup("\n");
  if (m.interrupted) w.Markup("- **interrupted**: the run stopped before every probe ended\n");
  w.Markup("- arms:\n");
  for (const core::ArmInfo* arm : ColumnArms(m)) {
    w.Markup("  - **").Text(arm->name, kCellBytes).Markup("**: ");
    w.Markup(core::ToString(arm->role)).Markup(", driver ").Text(arm->driver, kCellBytes);
    if (!arm->control.empty()) w.Markup(", control ").Text(arm->control, kCellBytes);
    if (!arm->description.empty()) w.Markup(" — ").Text(arm->description, kFactBytes);
    if (const std::string claims = core::DescribeLimits(arm->limits); !claims.empty()) {
      w.Markup(" — claims: ").Text(claims, kFactBytes);
    }
    if (!arm->source_path.empty()) w.Markup(" (").Text(arm->source_path, kCellBytes).Markup(")");
    w.Markup("\n");
  }
  w.Markup("\n");
}

void WriteTable(MarkdownWriter& w, const core::Matrix& m) {
  const auto arms = ColumnArms(m);
  w.Markup("| probe |");
  for (const core::ArmInfo* arm : arms) {
    w.Markup(" ").Text(arm->name, kCellBytes);
    w.Markup(arm->role == core::ArmRole::kControl ? " (control) |" : " |");
  }
  w.Markup("\n|---|");
  for (size_t i = 0; i < arms.size(); ++i) w.Markup("---|");
  w.Markup("\n");
  for (const core::Row& row : m.rows) {
    w.Markup("| ").Text(row.label, kCellBytes);
    if (row.level == core::Level::kAdvisory) w.Markup(" *(advisory)*");
    w.Markup(" |");
    for (const core::ArmInfo* arm : arms) {
      const core::Cell* cell = ShownCell(m, row.probe, *arm);
      w.Markup(" ");
      if (cell != nullptr) {
        w.Text(cell->classification.label, kCellBytes);
      } else {
        w.Markup("—");
      }
      if (arm->role == core::ArmRole::kCandidate) {
        const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
        w.Markup(" · **").Markup(v ? core::ToString(v->verdict.kind) : "no verdict").Markup("**");
      }
      w.Markup(" |");
    }
    w.Markup("\n");
  }
  w.Markup("\n");
}

void WriteSummary(MarkdownWriter& w, const core::Matrix& m) {
  w.Markup("**Summary:** ");
  bool first = true;
  for (const core::ArmInfo* arm : CandidateArms(m)) {
    w.Markup(first ? "" : "; ").Text(arm->name, kCellBytes).Markup(":");
    first = false;
    const VerdictCounts counts = CountVerdicts(m, arm->name);
    for (const core::VerdictKind k : kVerdictOrder) {
      w.Markup(fmt::format("{} {} {}", k == kVerdictOrder.front() ? "" : ",", counts.Of(k),
                           core::ToString(k)));
    }
    if (counts.missing > 0) w.Markup(fmt::format(", {} without verdict", counts.missing));
  }
  const int code = core::RunExitCode(m);
  w.Markup(fmt::format(" · exit code {} ({})\n\n", code, ExitCodeMeaning(code)));
  if (!m.notes.empty()) w.Markup("### Notes\n\n");
  for (const std::string& note : m.notes) w.Markup("- ").Text(note, kFactBytes).Markup("\n");
  if (!m.notes.empty()) w.Markup("\n");
  bool heading = false;
  for (const core::ArmInfo* arm : ColumnArms(m)) {
    for (const std::string& weakens : arm->weakens) {
      if (!heading) w.Markup("### Weakened isolation (declared by the manifests)\n\n");
      heading = true;
      w.Markup("- **").Text(arm->name, kCellBytes).Markup("**: ").Text(weakens, kFactBytes);
      w.Markup("\n");
    }
  }
  if (heading) w.Markup("\n");
}

void WriteExcerpt(MarkdownWriter& w, std::string_view stream, std::string_view head,
                  uint64_t bytes) {
  if (bytes == 0 && head.empty()) return;
  w.Markup(fmt::format("{} ({} bytes; at most the first {} bytes shown, cleaned):\n\n", stream,
                       bytes, kExcerptBytes));
  w.CodeBlock(head, kExcerptBytes).Markup("\n");
}

void WriteArmEvidence(MarkdownWriter& w, const core::Matrix& m, const core::Row& row,
                      const core::ArmInfo& arm) {
  const bool candidate = arm.role == core::ArmRole::kCandidate;
  const core::VerdictCell* v = candidate ? m.FindVerdict(row.probe, arm.name) : nullptr;
  const auto cells = CellsOf(m, row.probe, arm.name);
  const core::Cell* shown = ShownCell(m, row.probe, arm);
  w.Markup("**").Text(arm.name, kCellBytes).Markup("** (").Markup(core::ToString(arm.role));
  w.Markup(")");
  if (v != nullptr) w.Markup(": **").Markup(core::ToString(v->verdict.kind)).Markup("**");
  w.Markup("\n\n");
  if (cells.empty()) {
    if (v != nullptr) {
      w.Markup("- verdict reason: ").Text(v->verdict.reason, kFactBytes).Markup("\n");
    }
    w.Markup("- no observation\n\n");
    return;
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells.size() > 1) {
      w.Markup(fmt::format("cell {} of {}{}:\n\n", i + 1, cells.size(),
                           cells[i] == shown ? " (shown in the matrix)" : ""));
    }
    for (const Fact& fact : EvidenceFacts(*cells[i], v)) {
      w.Markup("- ").Markup(fact.key).Markup(": ").Text(fact.value, kFactBytes).Markup("\n");
    }
    w.Markup("\n");
    const core::Observation& obs = cells[i]->observation;
    // Raw stdout repeats the records listed above when a result came back and nothing was odd;
    // it is kept where it is the only evidence (no result, foreign lines). report.json has all.
    // This keeps matrix.md small enough to paste as one ticket comment.
    if (!obs.result || obs.foreign_lines > 0 || obs.dropped_records > 0) {
      WriteExcerpt(w, "stdout", obs.stdout_head, obs.stdout_bytes);
    }
    WriteExcerpt(w, "stderr", obs.stderr_head, obs.stderr_bytes);
  }
}

void WriteDetails(MarkdownWriter& w, const core::Matrix& m) {
  if (!m.rows.empty()) w.Markup("### Evidence\n\n");
  for (const core::Row& row : m.rows) {
    w.Markup("<details><summary>").HtmlText(row.probe, kCellBytes).Markup(" — ");
    w.HtmlText(row.label, kCellBytes).Markup(":");
    const char* separator = " ";
    for (const core::ArmInfo* arm : CandidateArms(m)) {
      const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
      w.Markup(separator).HtmlText(arm->name, kCellBytes).Markup(" ");
      separator = ", ";
      w.Markup(v ? core::ToString(v->verdict.kind) : "no verdict");
    }
    w.Markup("</summary>\n\n");
    for (const core::ArmInfo* arm : ColumnArms(m)) WriteArmEvidence(w, m, row, *arm);
    w.Markup("</details>\n\n");
  }
}

}  // namespace

std::string RenderMarkdown(const core::Matrix& m) {
  MarkdownWriter w;
  WriteHeader(w, m);
  WriteTable(w, m);
  WriteSummary(w, m);
  WriteDetails(w, m);
  std::string out = w.str();
  while (out.size() >= 2 && out.ends_with("\n\n")) out.pop_back();
  return out;
}

}  // namespace sandprobe::report
