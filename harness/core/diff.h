// Diff of two runs (`sandprobe diff OLD.json NEW.json`): the rows whose verdict or evidence kind
// changed, and the arms added or removed. A regression is a row that was PASS and is now FAIL,
// INCONCLUSIVE or ERROR (an accepted FAIL is shown as ACCEPTED and is not one: it does not fail
// the gate either). Pure; the CLI reads both report.json files into matrices
// (config/report_json.h).
#pragma once

#include <string>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::core {

// The verdict a row shows: "ACCEPTED" for an accepted FAIL (VerdictCell::Accepted), else
// ToString(kind); "" when there is no verdict (nullptr).
std::string ShownVerdict(const VerdictCell* v);

struct RowChange {
  std::string probe;
  std::string label;         // the row label (new run's, else old's)
  std::string candidate;     // candidate arm
  std::string old_verdict;   // ShownVerdict; "" when the row or arm was not in the old run
  std::string new_verdict;   // "" when not in the new run
  std::string old_evidence;  // evidence kind ("positive" | "absence" | "none"); "" when absent
  std::string new_evidence;
  std::string new_reason;   // the new verdict's reason ("" when absent)
  bool regression = false;  // PASS -> FAIL / INCONCLUSIVE / ERROR
};

struct MatrixDiff {
  std::vector<std::string> arms_added;  // "name (role)"
  std::vector<std::string> arms_removed;
  std::vector<RowChange> changes;  // in the new run's row and arm order, then rows only in old
  size_t rows_compared = 0;        // (probe, candidate) pairs present in both runs

  bool Regressed() const;
};

// Compares verdicts keyed by (probe, candidate arm name). A pair present in only one run is a
// change (never a regression); a pair whose shown verdict or evidence kind differs is a change.
MatrixDiff DiffMatrices(const Matrix& old_run, const Matrix& new_run);

}  // namespace sandprobe::core
