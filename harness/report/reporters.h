// Reporters: render a core::Matrix as a terminal matrix, Markdown (matrix.md, matrix-full.md), JSON
// (report.json), JUnit XML (junit.xml), TAP 14 (report.tap) and HTML (report.html). Reporters never
// judge: exposures, labels, verdicts and reasons all come from the matrix. Every string that came
// out of a sandbox (and every arm, manifest, probe or run name) is treated as hostile and goes
// through the one writer of its format (escape.h), which also bounds it: a 10 MB stdout head
// renders as a few KiB.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "core/diff.h"
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
  // Prints the verdict counts per candidate (ACCEPTED counted apart), one line per non-PASS/SKIP
  // verdict (probe, candidate, verdict or ACCEPTED, acceptance and reason), each flaky cell with
  // its trial counts, the run notes, the isolation-weakening options each arm declares and the
  // exit code `sandprobe run` will return (core::RunExitCode).
  void End(const core::Matrix& m);

 private:
  struct Column {
    core::ArmInfo arm;    // a copy: a control shown per family is no arm of the matrix (view.h)
    size_t label_cols;    // display columns of the label part
    size_t verdict_cols;  // 0 for controls
    size_t width;         // whole column
  };
  std::string Paint(std::string_view text, std::string_view sgr) const;
  std::string_view ShownColor(const core::VerdictCell& v) const;  // ACCEPTED in yellow

  std::ostream& out_;
  TextOptions options_;
  size_t row_label_cols_ = 5;
  std::vector<Column> columns_;
};

// Begin() + RowDone() for every row in suite order + End().
std::string RenderText(const core::Matrix& m, TextOptions options);

// Every format opens with the acceptance checklist when the suite names criteria (view.h
// Checklist(): text right after the streamed matrix, Markdown under the title, JSON `criteria`,
// JUnit a first <testsuite> per candidate, TAP comments before the plan, HTML under the banners).

// matrix.md: RenderMarkdownComment(m, kCommentMaxBytes).
std::string RenderMarkdown(const core::Matrix& m);

// report.json, pretty-printed with a 2-space indent; shape: reports/schema/report.schema.json
// (schema_version core::kReportSchemaVersion). Invalid UTF-8 is replaced, never thrown.
std::string RenderJson(const core::Matrix& m);

// junit.xml: <testsuites> with totals, one <testsuite> per candidate, one <testcase> per
// probe x candidate (FAIL -> <failure>, INCONCLUSIVE/ERROR -> <error>, SKIP -> <skipped>).
std::string RenderJunit(const core::Matrix& m);

// `sandprobe diff`: changed rows (REGRESSION first-class), arms added/removed, the tally and the
// exit code diff returns (1 on a regression). `old_name`/`new_name` label the two runs (paths).
std::string RenderDiffText(const core::MatrixDiff& d, std::string_view old_name,
                           std::string_view new_name);
std::string RenderDiffMarkdown(const core::MatrixDiff& d, std::string_view old_name,
                               std::string_view new_name);

// report.tap: TAP version 14. Comments with the run, banners, controls, weakenings and notes; a
// plan of one point per candidate; per candidate a commented subtest ("# Subtest: <arm>") with one
// test point per probe: PASS ok, SKIP "ok # SKIP <reason>", FAIL/INCONCLUSIVE/ERROR/no verdict
// "not ok" (advisory rows add "# TODO advisory row, does not gate", since they never change the
// exit code), each with a YAML diagnostics block (verdict, reason, the candidate's evidence facts
// and the shown cell of every control). The arm's own point is not ok when a required row is. An
// interrupted run ends with "Bail out!". A consumer's pass/fail therefore equals exit code 0.
std::string RenderTap(const core::Matrix& m);

// report.html: one self-contained page (inline CSS allowed by a hash in a Content-Security-Policy
// meta tag, no script, no external resource): banners on top, the verdict summary, the matrix with
// each cell coloured by its verdict (controls neutral) and a <details> opening the cell's evidence,
// then arms, notes and weakenings. Each cell is a <td data-probe data-arm [data-verdict]>.
std::string RenderHtml(const core::Matrix& m);

// matrix.md is a tracker comment: at most kCommentMaxBytes bytes (GitHub's comment limit is 65,536
// characters; a character is at least one byte, so bytes bound it however it is counted).
inline constexpr size_t kCommentMaxBytes = 64000;
// The whole Markdown report (matrix-full.md when matrix.md had to be cut): title, banners,
// summary, the matrix, run facts, notes, weakenings, then one <details> of evidence per row.
std::string RenderMarkdownFull(const core::Matrix& m);
// RenderMarkdownFull when it fits max_bytes; else the same head with a line pointing to
// matrix-full.md, the evidence of as many rows as fit (FAIL rows first, then ERROR, INCONCLUSIVE
// or missing, then the rest; shown in suite order), and a list of the rows left out. Never more
// than max_bytes (a head too long on its own is cut at a line with the pointer kept).
std::string RenderMarkdownComment(const core::Matrix& m, size_t max_bytes);

}  // namespace sandprobe::report
