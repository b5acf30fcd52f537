// Acceptance criteria judged on a matrix: a criterion holds for a candidate only when every row
// it names has a PASS verdict for that candidate. Any other verdict (FAIL, INCONCLUSIVE, ERROR,
// and SKIP: a row that did not apply measured nothing) or no verdict at all (a row missing from
// the run, an interrupted run) breaks it, and the result names those rows. Pure: no I/O.
//
// Criteria do not change the exit code (core::RunExitCode judges rows by their level); they are
// the checklist a ticket reads: which of the things it asked for were shown to hold.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::core {

// A row that keeps a criterion from holding for one candidate.
struct CriterionBreak {
  std::string probe;                   // probe id, as the criterion names it
  std::optional<VerdictKind> verdict;  // nullopt: the row has no verdict for the candidate
};

struct CriterionResult {
  std::string candidate;
  bool holds = false;                  // true only when `broken` is empty and the criterion
                                       // names at least one row
  std::vector<CriterionBreak> broken;  // in the criterion's order
};

// One criterion for one candidate, from the verdicts alone. A criterion that names no row never
// holds: nothing was measured.
CriterionResult JudgeCriterion(const Criterion& criterion, std::string_view candidate,
                               const std::vector<VerdictCell>& verdicts);

// Every criterion of the matrix for every candidate arm: out[i][j] is m.criteria[i] for the j-th
// candidate in m.arms order.
std::vector<std::vector<CriterionResult>> JudgeCriteria(const Matrix& m);

}  // namespace sandprobe::core
