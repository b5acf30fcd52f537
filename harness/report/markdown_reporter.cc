// matrix.md: the acceptance evidence posted as one tracker comment: title, banners, the verdict
// summary and the matrix first, then run facts and notes, then the evidence of each row in a
// <details> block, cut to kCommentMaxBytes with the rest in matrix-full.md. Every untrusted string
// goes through MarkdownWriter (escape.h); this file writes only its own fixed markup.
#include <fmt/format.h>

#include <algorithm>

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

void WriteTitle(MarkdownWriter& w, const core::Matrix& m) {
  w.Markup("# sandprobe run ").Text(m.run_id, kCellBytes).Markup("\n\n");
  WriteChecklist(w, m);
  for (const std::string& banner : m.banners)
    w.Markup("> **").Text(banner, kFactBytes).Markup("**\n\n");
  if (m.interrupted) w.Markup("**Interrupted**: the run stopped before every probe ended.\n\n");
}

void WriteRunFacts(MarkdownWriter& w, const core::Matrix& m) {
  w.Markup("- suite: ").Text(m.suite, kCellBytes).Markup("\n");
  w.Markup("- started: ").Text(m.started_at, kCellBytes);
  w.Markup(", finished: ").Text(m.finished_at, kCellBytes).Markup("\n");
  w.Markup("- arms:\n");
  for (const core::ArmInfo* arm : ListedArms(m)) {
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
    w.Markup(" ").Text(core::ArmTitle(*arm), kCellBytes);
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
        if (const std::string flaky = FlakyText(*cell); !flaky.empty()) {
          w.Markup(" *(").Text(flaky, kCellBytes).Markup(")*");
        }
      } else {
        w.Markup("—");
      }
      if (arm->role == core::ArmRole::kCandidate) {
        const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
        w.Markup(" · **").Text(ShownVerdictText(v), kCellBytes).Markup("**");
        if (OnSandboxWord(v)) w.Markup(" *(").Markup(kSandboxWord).Markup(")*");
      }
      w.Markup(" |");
    }
    w.Markup("\n");
  }
  w.Markup("\n");
}

// Every FAIL an expectation accepted (or whose acceptance expired), so none is hidden.
void WriteAccepted(MarkdownWriter& w, const core::Matrix& m) {
  bool heading = false;
  for (const core::Row& row : m.rows) {
    for (const core::ArmInfo* arm : CandidateArms(m)) {
      const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
      if (v == nullptr || !v->accepted || v->verdict.kind != core::VerdictKind::kFail) continue;
      if (!heading) w.Markup("### Known FAILs (expectations)\n\n");
      heading = true;
      w.Markup("- ").Text(row.label, kCellBytes).Markup(" in **").Text(arm->name, kCellBytes);
      w.Markup("**: **").Text(ShownVerdictText(v), kCellBytes).Markup("** — ");
      w.Text(AcceptanceText(*v), kFactBytes).Markup("\n");
    }
  }
  if (heading) w.Markup("\n");
}

// Every PASS that rests only on the sandbox's word, so none passes for proof.
void WriteSandboxWord(MarkdownWriter& w, const core::Matrix& m) {
  bool heading = false;
  for (const core::Row& row : m.rows) {
    for (const core::ArmInfo* arm : CandidateArms(m)) {
      const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
      if (!OnSandboxWord(v)) continue;
      if (!heading) {
        w.Markup("### PASS ").Markup(kSandboxWord).Markup("\n\n");
        w.Markup(kSandboxWordRule).Markup(".\n\n");
      }
      heading = true;
      w.Markup("- ").Text(row.label, kCellBytes).Markup(" (").Text(row.probe, kCellBytes);
      w.Markup(") in **").Text(arm->name, kCellBytes).Markup("**: ");
      w.Text(v->verdict.reason, kFactBytes).Markup("\n");
    }
  }
  if (heading) w.Markup("\n");
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
                           k == core::VerdictKind::kPass ? PassText(counts) : core::ToString(k)));
    }
    if (counts.accepted > 0) w.Markup(fmt::format(", {} ACCEPTED", counts.accepted));
    if (counts.missing > 0) w.Markup(fmt::format(", {} without verdict", counts.missing));
  }
  const int code = core::RunExitCode(m);
  w.Markup(fmt::format(" · exit code {} ({})\n\n", code, ExitCodeMeaning(code)));
  WriteAccepted(w, m);
  WriteSandboxWord(w, m);
}

void WriteNotes(MarkdownWriter& w, const core::Matrix& m) {
  if (!m.notes.empty()) w.Markup("### Notes\n\n");
  for (const std::string& note : m.notes) w.Markup("- ").Text(note, kFactBytes).Markup("\n");
  if (!m.notes.empty()) w.Markup("\n");
  bool heading = false;
  for (const core::ArmInfo* arm : ListedArms(m)) {
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
  if (v != nullptr) w.Markup(": **").Text(ShownVerdictText(v), kCellBytes).Markup("**");
  if (OnSandboxWord(v)) w.Markup(" *(").Markup(kSandboxWord).Markup(")*");
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

// The <details> block of evidence of one row.
std::string RowDetails(const core::Matrix& m, const core::Row& row) {
  MarkdownWriter w;
  w.Markup("<details><summary>").HtmlText(row.probe, kCellBytes).Markup(" — ");
  w.HtmlText(row.label, kCellBytes).Markup(":");
  const char* separator = " ";
  for (const core::ArmInfo* arm : CandidateArms(m)) {
    const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
    w.Markup(separator).HtmlText(arm->name, kCellBytes).Markup(" ");
    separator = ", ";
    w.HtmlText(ShownVerdictText(v), kCellBytes);
    if (OnSandboxWord(v)) w.Markup(" (").Markup(kSandboxWord).Markup(")");
  }
  w.Markup("</summary>\n\n");
  for (const core::ArmInfo* arm : ListedArms(m)) WriteArmEvidence(w, m, row, *arm);
  w.Markup("</details>\n\n");
  return w.str();
}

// Which evidence a cut comment keeps first: 0 a row with a FAIL, 1 with an ERROR, INCONCLUSIVE or
// missing verdict, 2 with a PASS (the evidence a sandbox holds), 3 a row SKIPped by every
// candidate.
int Priority(const core::Matrix& m, const core::Row& row) {
  int best = 3;
  for (const core::ArmInfo* arm : CandidateArms(m)) {
    const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
    if (v != nullptr && v->verdict.kind == core::VerdictKind::kFail) return 0;
    if (v == nullptr || v->verdict.kind == core::VerdictKind::kError ||
        v->verdict.kind == core::VerdictKind::kInconclusive) {
      best = 1;
    } else if (v->verdict.kind != core::VerdictKind::kSkip) {
      best = std::min(best, 2);
    }
  }
  return best;
}

// Title, banners, summary, [pointer], the matrix, run facts, notes, weakenings.
std::string Head(const core::Matrix& m, std::string_view pointer) {
  MarkdownWriter w;
  WriteTitle(w, m);
  WriteSummary(w, m);
  w.Markup(pointer);
  WriteTable(w, m);
  WriteRunFacts(w, m);
  WriteNotes(w, m);
  return w.str();
}

std::string Trimmed(std::string out) {
  while (out.size() >= 2 && out.ends_with("\n\n")) out.pop_back();
  return out;
}

constexpr std::string_view kEvidenceHeading = "### Evidence\n\n";

}  // namespace

std::string RenderMarkdownFull(const core::Matrix& m) {
  std::string out = Head(m, "");
  if (!m.rows.empty()) out += kEvidenceHeading;
  for (const core::Row& row : m.rows) out += RowDetails(m, row);
  return Trimmed(std::move(out));
}

std::string RenderMarkdownComment(const core::Matrix& m, size_t max_bytes) {
  std::string full = RenderMarkdownFull(m);
  if (full.size() <= max_bytes) return full;
  std::vector<std::string> blocks;
  for (const core::Row& row : m.rows) blocks.push_back(RowDetails(m, row));
  // Rows by priority, suite order within one priority; each kept if it still fits.
  std::vector<size_t> order(m.rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::ranges::stable_sort(order, {}, [&](size_t i) { return Priority(m, m.rows[i]); });
  const auto pointer = [&](size_t shown) {
    return fmt::format(
        "> **This comment is cut to {} bytes**: it shows the evidence of {} of {} rows. The full "
        "report, with the evidence of every row, is `matrix-full.md` beside this file "
        "({} bytes); every observation is in `report.json`.\n\n",
        max_bytes, shown, m.rows.size(), full.size());
  };
  // The pointer's digits can only shrink when fewer rows are shown; reserve the widest form.
  const std::string head = Head(m, pointer(m.rows.size()));
  const std::string left_out_heading = "Evidence left out here (in `matrix-full.md`): ";
  size_t budget = head.size() + kEvidenceHeading.size() + left_out_heading.size() + 2;
  std::vector<bool> keep(m.rows.size(), false);
  // Each left-out row costs its probe id in the closing list (bounded like a cell, escaped).
  std::vector<std::string> names;
  for (const core::Row& row : m.rows) {
    MarkdownWriter n;
    n.Markup("`").Text(row.probe, kCellBytes).Markup("`, ");
    names.push_back(n.str());
    budget += names.back().size();
  }
  if (budget <= max_bytes) {
    for (const size_t i : order) {
      if (budget + blocks[i].size() - names[i].size() > max_bytes) continue;
      budget += blocks[i].size() - names[i].size();
      keep[i] = true;
    }
  }
  size_t shown = 0;
  for (const bool k : keep) shown += k ? 1 : 0;
  std::string out = Head(m, pointer(shown));
  if (out.size() + kEvidenceHeading.size() > max_bytes) {
    // Even the matrix does not fit: cut at a line, the pointer (above the matrix) stays.
    const std::string_view tail = "\n… (cut here: the rest is in `matrix-full.md`)\n";
    out.resize(max_bytes - tail.size());
    out.resize(out.rfind('\n') + 1);
    // A cut inside a multi-byte character cannot happen: '\n' ends a line on a boundary.
    return out + std::string(tail.substr(1));
  }
  out += kEvidenceHeading;
  std::string left_out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (keep[i]) {
      out += blocks[i];
    } else {
      left_out += names[i];
    }
  }
  if (!left_out.empty()) {
    left_out.resize(left_out.size() - 2);  // the last ", "
    out += left_out_heading + left_out + "\n";
  }
  return Trimmed(std::move(out));
}

std::string RenderMarkdown(const core::Matrix& m) {
  return RenderMarkdownComment(m, kCommentMaxBytes);
}

}  // namespace sandprobe::report
