// Reporters: render a core::Matrix as a terminal matrix, Markdown (matrix.md), JSON (report.json)
// and JUnit XML (junit.xml). Reporters never judge: exposures, labels, verdicts and reasons all
// come from the matrix. Every string that came out of a sandbox (and every arm, manifest, probe or
// run name) is treated as hostile and goes through the one writer of its format (escape.h), which
// also bounds it: a 10 MB stdout head renders as a few KiB.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::report {

struct TextOptions {
  bool color = false;  // ANSI colours: FAIL red, PASS green, INCONCLUSIVE/ERROR yellow, SKIP dim
  size_t width = 100;  // display columns for the summary lines below the matrix (wrapped)
};

// Terminal matrix, streamed. One column per arm: controls first ("name (control)", cell = label),
// then candidates ("name", cell = label + verdict). Column widths come from the data known at
// Begin() (names, and any cells already in the matrix); a cell is capped at 28 display columns
// and cut with "…". Writes to `out` only; never throws on hostile text.
class TextReporter {
 public:
  TextReporter(std::ostream& out, TextOptions options);

  // Prints the title and the header. Call once, when arms and rows are known.
  void Begin(const core::Matrix& m);
  // Prints the row of `probe` (a Row.probe id). The runner calls it in completion order, once all
  // the row's cells and verdicts are in. Unknown probe ids print nothing.
  void RowDone(const core::Matrix& m, const std::string& probe);
  // Prints the verdict counts per candidate, one line per non-PASS/SKIP verdict (probe, candidate,
  // verdict, reason), the run notes, the isolation-weakening options each arm declares and the
  // exit code `sandprobe run` will return (core::RunExitCode).
  void End(const core::Matrix& m);

 private:
  struct Column {
    const core::ArmInfo* arm;
    size_t label_cols;    // display columns of the label part
    size_t verdict_cols;  // 0 for controls
    size_t width;         // whole column
  };
  std::string Paint(std::string_view text, std::string_view sgr) const;

  std::ostream& out_;
  TextOptions options_;
  size_t row_label_cols_ = 5;
  std::vector<Column> columns_;
};

// Begin() + RowDone() for every row in suite order + End().
std::string RenderText(const core::Matrix& m, TextOptions options);

// Every format opens with the acceptance checklist when the suite names criteria (view.h
// Checklist(): text right after the streamed matrix, Markdown under the title, JSON `criteria`,
// JUnit a first <testsuite> per candidate).

// matrix.md: title (run id, suite, times), the matrix as a table, a one-line summary, notes,
// weakened isolation, then one <details> block of evidence per row.
std::string RenderMarkdown(const core::Matrix& m);

// report.json, pretty-printed with a 2-space indent; shape: reports/schema/report.schema.json
// (schema_version core::kReportSchemaVersion). Invalid UTF-8 is replaced, never thrown.
std::string RenderJson(const core::Matrix& m);

// junit.xml: <testsuites> with totals, one <testsuite> per candidate, one <testcase> per
// probe x candidate (FAIL -> <failure>, INCONCLUSIVE/ERROR -> <error>, SKIP -> <skipped>).
std::string RenderJunit(const core::Matrix& m);

}  // namespace sandprobe::report
