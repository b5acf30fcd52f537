// `sandprobe diff` output: the rows of core::DiffMatrices as a terminal list or a Markdown table.
// Names and reasons come from report files: untrusted, so they go through the format's writer.
#include <fmt/format.h>

#include "report/escape.h"
#include "report/reporters.h"

namespace sandprobe::report {
namespace {

constexpr size_t kNameCols = 60;
constexpr size_t kReasonBytes = 400;

std::string OrNone(const std::string& s) { return s.empty() ? "(none)" : s; }

std::string Tally(const core::MatrixDiff& d) {
  size_t regressions = 0;
  for (const core::RowChange& c : d.changes) regressions += c.regression ? 1 : 0;
  return fmt::format("{} row(s) compared, {} changed, {} regression(s)", d.rows_compared,
                     d.changes.size(), regressions);
}

}  // namespace

std::string RenderDiffText(const core::MatrixDiff& d, std::string_view old_name,
                           std::string_view new_name) {
  std::string out = fmt::format("sandprobe diff {} -> {}\n", TerminalText(old_name, 200),
                                TerminalText(new_name, 200));
  for (const std::string& a : d.arms_added)
    out += "  arm added:   " + TerminalText(a, kNameCols) + "\n";
  for (const std::string& a : d.arms_removed) {
    out += "  arm removed: " + TerminalText(a, kNameCols) + "\n";
  }
  if (!d.changes.empty()) out += "\nchanged rows\n";
  for (const core::RowChange& c : d.changes) {
    out += fmt::format("  {} {}  {}  {} -> {}  (evidence {} -> {})\n",
                       c.regression ? "REGRESSION" : "changed   ", TerminalText(c.probe, kNameCols),
                       TerminalText(c.candidate, kNameCols), OrNone(c.old_verdict),
                       OrNone(c.new_verdict), OrNone(c.old_evidence), OrNone(c.new_evidence));
    if (!c.new_reason.empty()) out += "      " + TerminalText(c.new_reason, kReasonBytes) + "\n";
  }
  out += fmt::format("\n{}; exit code {}\n", Tally(d), d.Regressed() ? 1 : 0);
  return out;
}

std::string RenderDiffMarkdown(const core::MatrixDiff& d, std::string_view old_name,
                               std::string_view new_name) {
  MarkdownWriter w;
  w.Markup("# sandprobe diff\n\n- old: ").Text(old_name, 200).Markup("\n- new: ");
  w.Text(new_name, 200).Markup("\n");
  for (const std::string& a : d.arms_added) w.Markup("- arm added: ").Text(a, 200).Markup("\n");
  for (const std::string& a : d.arms_removed) w.Markup("- arm removed: ").Text(a, 200).Markup("\n");
  w.Markup("\n");
  if (!d.changes.empty()) {
    w.Markup("| | probe | candidate | old | new | evidence | new reason |\n");
    w.Markup("|---|---|---|---|---|---|---|\n");
  }
  for (const core::RowChange& c : d.changes) {
    w.Markup(c.regression ? "| **regression** | " : "| changed | ");
    w.Text(c.label, 120).Markup(" (`").Text(c.probe, 120).Markup("`) | ");
    w.Text(c.candidate, 120).Markup(" | ").Text(OrNone(c.old_verdict), 40).Markup(" | ");
    w.Markup(c.regression ? "**" : "").Text(OrNone(c.new_verdict), 40);
    w.Markup(c.regression ? "**" : "").Markup(" | ").Text(OrNone(c.old_evidence), 40);
    w.Markup(" → ").Text(OrNone(c.new_evidence), 40).Markup(" | ");
    w.Text(c.new_reason, kReasonBytes).Markup(" |\n");
  }
  if (!d.changes.empty()) w.Markup("\n");
  w.Markup(fmt::format("**{}** · exit code {}\n", Tally(d), d.Regressed() ? 1 : 0));
  return w.str();
}

}  // namespace sandprobe::report
