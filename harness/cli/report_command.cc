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
#include "report/reporters.h"

namespace sandprobe::cli {
namespace {

namespace fs = std::filesystem;

// The file name `sandprobe run --out` gives each format.
constexpr std::pair<std::string_view, std::string_view> kFiles[] = {
    {"text", "matrix.txt"}, {"markdown", "matrix.md"}, {"json", "report.json"},
    {"junit", "junit.xml"}, {"tap", "report.tap"},     {"html", "report.html"}};

}  // namespace

void AddReport(CLI::App& app, ReportArgs& a) {
  CLI::App* report = app.add_subcommand(
      "report", "Re-render a saved run (report.json) as text, markdown, json, junit, tap or html");
  report->add_option("report", a.report, "report.json of a run")->required();
  report->add_option("--format", a.formats, "comma list of text, markdown, json, junit, tap, html")
      ->capture_default_str();
  report->add_option("--out", a.out,
                     "write matrix.txt, matrix.md (+ matrix-full.md), report.json, junit.xml, "
                     "report.tap, report.html here (default: print to stdout)");
  report->add_flag("--no-color", a.no_color, "no ANSI colours in text (NO_COLOR is honoured too)");
}

int DoReport(const ReportArgs& a) {
  std::vector<std::string_view> formats;
  for (size_t i = 0; i <= a.formats.size();) {
    const size_t comma = std::min(a.formats.find(',', i), a.formats.size());
    const std::string_view f = std::string_view(a.formats).substr(i, comma - i);
    if (std::ranges::find(kFiles, f, &std::pair<std::string_view, std::string_view>::first) ==
        std::end(kFiles)) {
      return SetupError(fmt::format("--format: unknown format '{}'", f),
                        "use a comma list of text, markdown, json, junit, tap, html");
    }
    formats.push_back(f);
    i = comma + 1;
  }
  auto matrix = config::LoadReportJson(a.report);
  if (!matrix) return SetupError(matrix.error(), "give the report.json a run wrote");
  const char* no_color = std::getenv("NO_COLOR");
  report::TextOptions text;
  text.color = a.out.empty() && !a.no_color && isatty(STDOUT_FILENO) &&
               (no_color == nullptr || *no_color == '\0');
  for (const std::string_view f : formats) {
    std::string rendered;
    if (f == "text") rendered = report::RenderText(*matrix, text);
    if (f == "markdown") rendered = report::RenderMarkdown(*matrix);
    if (f == "json") rendered = report::RenderJson(*matrix);
    if (f == "junit") rendered = report::RenderJunit(*matrix);
    if (f == "tap") rendered = report::RenderTap(*matrix);
    if (f == "html") rendered = report::RenderHtml(*matrix);
    if (a.out.empty()) {
      std::cout << rendered;
      continue;
    }
    std::error_code ec;
    fs::create_directories(a.out, ec);
    if (f == "markdown") {  // as `run --out` writes it: the uncut report beside a cut comment
      const fs::path full_path = fs::path(a.out) / "matrix-full.md";
      std::string full = report::RenderMarkdownFull(*matrix);
      if (full != rendered) {
        std::ofstream full_out(full_path, std::ios::binary | std::ios::trunc);
        full_out << full;
        if (!full_out) return SetupError(fmt::format("cannot write {}", full_path.string()));
        std::cerr << "sandprobe: wrote " << full_path.string() << "\n";
      } else {
        fs::remove(full_path, ec);
        ec.clear();
      }
    }
    const fs::path path =
        fs::path(a.out) /
        std::ranges::find(kFiles, f, &std::pair<std::string_view, std::string_view>::first)->second;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << rendered;
    if (ec || !out) return SetupError(fmt::format("cannot write {}", path.string()));
    std::cerr << "sandprobe: wrote " << path.string() << "\n";
  }
  return 0;
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
