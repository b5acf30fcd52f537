// `sandprobe report REPORT.json`: re-renders any format from a saved run (report.json is the
// source of truth; a re-render of a real run reproduces its matrix.md and junit.xml byte for
// byte). `sandprobe diff OLD.json NEW.json`: the rows whose verdict or evidence kind changed, arms
// added or removed; exit 1 on a regression (PASS -> FAIL/INCONCLUSIVE/ERROR).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "config/report_json.h"
#include "core/diff.h"
#include "report/formats.h"
#include "report/reporters.h"

namespace sandprobe::cli {

namespace fs = std::filesystem;

void AddReport(CLI::App& app, ReportArgs& a) {
  CLI::App* report = app.add_subcommand(
      "report", "Re-render a saved run (report.json) as " + report::FormatNames());
  report->add_option("report", a.report, "report.json of a run")->required();
  report->add_option("--format", a.formats, "comma list of " + report::FormatNames())
      ->capture_default_str();
  report->add_option("--out", a.out,
                     fmt::format("write {} here (default: print to stdout)",
                                 report::FormatFiles(/*written_by_run=*/false)));
  report->add_flag("--no-color", a.no_color, "no ANSI colours in text (NO_COLOR is honoured too)");
}

int DoReport(const ReportArgs& a) {
  const auto formats = report::ParseFormats(a.formats);
  if (!formats) {
    return SetupError("--format: " + formats.error(),
                      "use a comma list of " + report::FormatNames());
  }
  auto matrix = config::LoadReportJson(a.report);
  if (!matrix) return SetupError(matrix.error(), "give the report.json a run wrote");
  const char* no_color = std::getenv("NO_COLOR");
  report::TextOptions text;
  text.color = a.out.empty() && !a.no_color && isatty(STDOUT_FILENO) &&
               (no_color == nullptr || *no_color == '\0');
  if (a.out.empty()) {
    for (const report::Format* f : *formats) std::cout << f->render(*matrix, text);
    return 0;
  }
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return SetupError(fmt::format("cannot create --out {}: {}", a.out, ec.message()));
  return WriteReports(*formats, *matrix, a.out, text);
}

void AddDiff(CLI::App& app, DiffArgs& a) {
  CLI::App* diff = app.add_subcommand(
      "diff",
      "Compare two runs (report.json): changed verdicts and evidence, arms added or removed; exit "
      "1 on a regression (PASS -> FAIL/INCONCLUSIVE/ERROR)");
  diff->add_option("old", a.old_report, "report.json of the earlier run (the baseline)")
      ->required();
  diff->add_option("new", a.new_report, "report.json of the later run")->required();
  diff->add_option("--format", a.format, "text or markdown")
      ->check(CLI::IsMember({"text", "markdown"}))
      ->capture_default_str();
}

int DoDiff(const DiffArgs& a) {
  auto old_run = config::LoadReportJson(a.old_report);
  if (!old_run) return SetupError(old_run.error());
  auto new_run = config::LoadReportJson(a.new_report);
  if (!new_run) return SetupError(new_run.error());
  const core::MatrixDiff d = core::DiffMatrices(*old_run, *new_run);
  std::cout << (a.format == "markdown" ? report::RenderDiffMarkdown(d, a.old_report, a.new_report)
                                       : report::RenderDiffText(d, a.old_report, a.new_report));
  return d.Regressed() ? 1 : 0;
}

}  // namespace sandprobe::cli
