// Terminal matrix reporter (streamed). Layout and colours: reporters.h.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "report/escape.h"
#include "report/reporters.h"
#include "report/text_clean.h"
#include "report/view.h"

namespace sandprobe::report {
namespace {

constexpr size_t kMaxCell = 28;          // display columns of one cell or arm name
constexpr size_t kStreamLabelCols = 20;  // label width when no cell is known at Begin()
constexpr size_t kReasonCols = 400;      // a reason is cut here before wrapping
constexpr std::string_view kGap = "  ";
constexpr std::string_view kControlSuffix = " (control)";
constexpr std::string_view kRed = "31", kGreen = "32", kYellow = "33", kDim = "2", kBold = "1";

std::string_view VerdictColor(core::VerdictKind k) {
  switch (k) {
    case core::VerdictKind::kFail:
      return kRed;
    case core::VerdictKind::kPass:
      return kGreen;
    case core::VerdictKind::kSkip:
      return kDim;
    default:
      return kYellow;
  }
}

// The verdict column: the shown verdict, "PASS*" for a PASS on the sandbox's word (End() lists
// those rows under that heading).
std::string VerdictMark(const core::VerdictCell* v) {
  return ShownVerdictText(v) + (OnSandboxWord(v) ? "*" : "");
}

// The arm's name, cut to fit, then what must stay visible: its address family and "(control)".
std::string Header(const core::ArmInfo& arm) {
  std::string suffix = arm.ip_family.empty() ? "" : " (" + TerminalText(arm.ip_family, 8) + ")";
  if (arm.role == core::ArmRole::kControl) suffix += kControlSuffix;
  return TerminalText(arm.name, kMaxCell - std::min(suffix.size(), kMaxCell / 2)) + suffix;
}

// Words of single-line `text` wrapped at `width` columns; continuation lines indented by
// `indent`. The first line starts at column `first_col` (the caller printed a prefix).
std::string Wrap(std::string_view text, size_t width, size_t first_col, size_t indent) {
  width = std::max(width, indent + 20);
  std::string out;
  size_t col = first_col;
  bool line_start = true;
  auto new_line = [&] {
    out += '\n';
    out.append(indent, ' ');
    col = indent;
    line_start = true;
  };
  std::istringstream words{std::string(text)};
  for (std::string word; words >> word;) {
    std::string_view rest = word;
    size_t w = DisplayWidth(rest);
    const size_t needed = w + (line_start ? 0 : 1);
    if (col + needed > width && col > indent && indent + w <= width) {
      new_line();
    } else if (!line_start) {
      out += ' ';
      ++col;
    }
    while (col + w > width) {  // a word longer than a line: hard split on code points
      const size_t n = PrefixFitting(rest, col < width ? width - col : 0);
      if (n == 0) {  // not even one character fits after the prefix: continue below it
        new_line();
        continue;
      }
      out += rest.substr(0, n);
      rest.remove_prefix(n);
      w = DisplayWidth(rest);
      new_line();
    }
    out += rest;
    col += w;
    line_start = false;
  }
  return out;
}

}  // namespace

TextReporter::TextReporter(std::ostream& out, TextOptions options) : out_(out), options_(options) {}

std::string TextReporter::Paint(std::string_view text, std::string_view sgr) const {
  if (!options_.color || text.empty()) return std::string(text);
  return fmt::format("\x1b[{}m{}\x1b[0m", sgr, text);
}

void TextReporter::Begin(const core::Matrix& m) {
  row_label_cols_ = 5;  // "probe"
  for (const core::Row& row : m.rows) {
    row_label_cols_ = std::max(row_label_cols_, DisplayWidth(TerminalText(row.label, kMaxCell)));
  }
  columns_.clear();
  for (const core::ArmInfo* arm : ColumnArms(m)) {
    const bool candidate = arm->role == core::ArmRole::kCandidate;
    size_t label_cols = 0, verdict_cols = 0;
    bool any_cell = false;
    for (const core::Row& row : m.rows) {
      if (const core::Cell* cell = ShownCell(m, row.probe, *arm)) {
        any_cell = true;
        // A flaky cell's "~" gets a column of its own, so the label itself is not cut for it.
        label_cols =
            std::max(label_cols, DisplayWidth(TerminalText(cell->classification.label, kMaxCell)) +
                                     (FlakyText(*cell).empty() ? 0 : 1));
      }
      if (const core::VerdictCell* v = candidate ? m.FindVerdict(row.probe, arm->name) : nullptr) {
        verdict_cols = std::max(verdict_cols, VerdictMark(v).size());
      }
    }
    if (!any_cell) label_cols = kStreamLabelCols;
    if (candidate && verdict_cols == 0) {  // streaming: room for the longest verdict
      verdict_cols = core::ToString(core::VerdictKind::kInconclusive).size();
    }
    label_cols = std::max<size_t>(label_cols, 1);
    const size_t body = candidate ? label_cols + kGap.size() + verdict_cols : label_cols;
    const size_t width = std::max(body, DisplayWidth(Header(*arm)));
    label_cols += width - body;  // a wide header widens the label part
    columns_.push_back({*arm, label_cols, verdict_cols, width});
  }

  out_ << "sandprobe run " << TerminalText(m.run_id, 64) << " · suite " << TerminalText(m.suite, 64)
       << " · started " << TerminalText(m.started_at, 40) << "\n\n";
  std::string header = PadColumns("probe", row_label_cols_);
  std::string rule(row_label_cols_, '-');
  for (const Column& c : columns_) {
    header += std::string(kGap) + PadColumns(Header(c.arm), c.width);
    rule += std::string(kGap) + std::string(c.width, '-');
  }
  while (!header.empty() && header.back() == ' ') header.pop_back();
  out_ << header << '\n' << rule << '\n';
}

void TextReporter::RowDone(const core::Matrix& m, const std::string& probe) {
  const auto row = std::ranges::find(m.rows, probe, &core::Row::probe);
  if (row == m.rows.end()) return;
  std::string line = PadColumns(TerminalText(row->label, row_label_cols_), row_label_cols_);
  for (const Column& c : columns_) {
    line += kGap;
    const core::Cell* cell = ShownCell(m, probe, c.arm);
    // A flaky cell (repeat trials disagreed) ends in "~"; End() lists the counts.
    const bool flaky = cell != nullptr && !FlakyText(*cell).empty();
    const std::string label =
        cell ? TerminalText(cell->classification.label, c.label_cols - (flaky ? 1 : 0)) +
                   (flaky ? "~" : "")
             : "-";
    const std::string padding(c.label_cols - DisplayWidth(label), ' ');
    if (c.arm.role == core::ArmRole::kControl) {
      const bool exposed = cell && cell->classification.exposure == core::Exposure::kExposed;
      line += (exposed ? Paint(label, kBold) : label) + padding;
      continue;
    }
    line += label + padding + std::string(kGap);
    const core::VerdictCell* v = m.FindVerdict(probe, c.arm.name);
    const std::string verdict = v ? VerdictMark(v) : "-";
    line += v ? Paint(verdict, ShownColor(*v)) : verdict;
    line.append(c.verdict_cols - std::min(c.verdict_cols, verdict.size()), ' ');
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out_ << line << '\n';
}

std::string_view TextReporter::ShownColor(const core::VerdictCell& v) const {
  return v.Accepted() ? kYellow : VerdictColor(v.verdict.kind);
}

void TextReporter::End(const core::Matrix& m) {
  // The checklist comes first once every row is in (the matrix above streams as rows finish).
  const auto checklist = Checklist(m);
  if (!checklist.empty()) out_ << "\nacceptance criteria (" << kChecklistRule << ")\n";
  for (const CandidateChecklist& list : checklist) {
    out_ << "  " << TerminalText(list.candidate->name, kMaxCell)
         << fmt::format(": {} of {} hold\n", list.holding, list.items.size());
    for (const ChecklistItem& item : list.items) {
      const std::string_view mark = item.holds ? "HOLDS " : "BROKEN";
      out_ << "    " << Paint(mark, item.holds ? kGreen : kRed) << kGap
           << Wrap(TerminalText(item.criterion->name, kReasonCols), options_.width, 12, 12) << '\n';
      if (item.broken.empty()) continue;
      std::string rows;
      for (const BrokenRow& row : item.broken) {
        rows += (rows.empty() ? "" : ", ") + TerminalText(BrokenRowText(row), kReasonCols);
      }
      out_ << "            " << Wrap("broken by: " + rows, options_.width, 12, 14) << '\n';
    }
  }
  for (const std::string& banner : m.banners) {
    out_ << '\n'
         << Paint("!! " + Wrap(TerminalText(banner, kReasonCols), options_.width, 3, 3),
                  VerdictColor(core::VerdictKind::kFail))
         << '\n';
  }
  out_ << "\nverdicts\n";
  for (const core::ArmInfo* arm : CandidateArms(m)) {
    const VerdictCounts counts = CountVerdicts(m, arm->name);
    std::string line = "  " + TerminalText(arm->name, kMaxCell) + ":";
    for (const core::VerdictKind k : kVerdictOrder) {
      line += fmt::format("{} {} {}", k == kVerdictOrder.front() ? "" : ",", counts.Of(k),
                          Paint(core::ToString(k), VerdictColor(k)));
      if (k == core::VerdictKind::kPass && counts.on_sandbox_word > 0) {
        line += fmt::format(" ({} {})", counts.on_sandbox_word, Paint(kSandboxWord, kYellow));
      }
    }
    if (counts.accepted > 0) {
      line += fmt::format(", {} {}", counts.accepted, Paint("ACCEPTED", kYellow));
    }
    if (counts.missing > 0) line += fmt::format(", {} without verdict", counts.missing);
    out_ << line << '\n';
  }
  bool heading = false;
  for (const core::Row& row : m.rows) {
    for (const core::ArmInfo* arm : CandidateArms(m)) {
      const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
      if (v == nullptr || v->verdict.kind == core::VerdictKind::kPass ||
          v->verdict.kind == core::VerdictKind::kSkip) {
        continue;
      }
      if (!heading) out_ << "\nnot passing\n";
      heading = true;
      const std::string kind = ShownVerdictText(v);
      const std::string head =
          fmt::format("  {}  {}  ", TerminalText(row.probe, 60), TerminalText(arm->name, kMaxCell));
      const std::string_view level = row.level == core::Level::kAdvisory ? " (advisory)" : "";
      const size_t reason_col = DisplayWidth(head) + kind.size() + level.size() + kGap.size();
      const std::string accepted = AcceptanceText(*v);
      const std::string reason =
          accepted.empty() ? v->verdict.reason : accepted + "; " + v->verdict.reason;
      out_ << head << Paint(kind, ShownColor(*v)) << level << kGap
           << Wrap(TerminalText(reason, kReasonCols), options_.width, reason_col, 6) << '\n';
    }
  }
  heading = false;
  for (const core::Row& row : m.rows) {
    for (const core::ArmInfo* arm : CandidateArms(m)) {
      const core::VerdictCell* v = m.FindVerdict(row.probe, arm->name);
      if (!OnSandboxWord(v)) continue;
      if (!heading) {
        out_ << "\n"
             << Wrap(fmt::format("{} (PASS*: {})", kSandboxWord, kSandboxWordRule), options_.width,
                     0, 2)
             << '\n';
      }
      heading = true;
      const std::string head =
          fmt::format("  {}  {}  ", TerminalText(row.probe, 60), TerminalText(arm->name, kMaxCell));
      out_ << head
           << Wrap(TerminalText(v->verdict.reason, kReasonCols), options_.width, DisplayWidth(head),
                   6)
           << '\n';
    }
  }
  heading = false;
  for (const core::Row& row : m.rows) {
    for (const core::ArmInfo* arm : ListedArms(m)) {
      for (const core::Cell* cell : CellsOf(m, row.probe, arm->name)) {
        const std::string flaky = FlakyText(*cell);
        if (flaky.empty()) continue;
        if (!heading) out_ << "\nflaky (repeat trials disagreed; marked ~)\n";
        heading = true;
        out_ << "  " << TerminalText(row.probe, 60) << "  " << TerminalText(arm->name, kMaxCell)
             << "  " << TerminalText(flaky, kReasonCols) << '\n';
      }
    }
  }
  if (!m.notes.empty()) out_ << "\nnotes\n";
  for (const std::string& note : m.notes) {
    out_ << "  - " << Wrap(TerminalText(note, kReasonCols), options_.width, 4, 4) << '\n';
  }
  heading = false;
  for (const core::ArmInfo* arm : ListedArms(m)) {
    for (const std::string& weakens : arm->weakens) {
      if (!heading) out_ << "\nweakened isolation (declared by the manifests)\n";
      heading = true;
      const std::string prefix = "  " + TerminalText(arm->name, kMaxCell) + ": ";
      out_ << prefix
           << Wrap(TerminalText(weakens, kReasonCols), options_.width, DisplayWidth(prefix), 6)
           << '\n';
    }
  }
  if (m.interrupted)
    out_ << "\n" << Paint("run interrupted", kYellow) << " before every probe ended\n";
  const int code = core::RunExitCode(m);
  out_ << "\nexit code " << code << ": " << ExitCodeMeaning(code) << '\n';
}

std::string RenderText(const core::Matrix& m, TextOptions options) {
  std::ostringstream out;
  TextReporter reporter(out, options);
  reporter.Begin(m);
  for (const core::Row& row : m.rows) reporter.RowDone(m, row.probe);
  reporter.End(m);
  return out.str();
}

}  // namespace sandprobe::report
