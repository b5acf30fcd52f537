// The row book: collects each task's observations (one per trial, `run --repeat N`) and, when the
// last one of a row is in, stamps the cells' identity, classifies every trial, folds the trials of
// a task into one cell (core::AggregateTrials: one leak in N is shown and judged), judges every
// candidate of the row and appends cells and verdicts to the matrix. Thread-safe; rows complete in
// whatever order tasks finish.
#pragma once

#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "core/expect.h"
#include "core/matrix.h"
#include "core/observation.h"
#include "core/probe.h"
#include "runner/plan.h"
#include "runner/run.h"

namespace sandprobe::runner {

class RowBook {
 public:
  // `plan`, `probes` (every probe the plan names), `matrix` (arms and rows already filled),
  // `observer` and `expectations` must outlive the book.
  // Each task runs `trials` times (>= 1).
  RowBook(const Plan& plan, const std::vector<core::ProbeDescriptor>& probes, core::Matrix& matrix,
          RunObserver& observer, size_t trials = 1,
          std::span<const core::Expectation> expectations = {}, std::string today = "");

  // Stores one trial's observation of plan.tasks[task_index]; finalizes its row when it was the
  // row's last one (then observer.OnRow is called, under the book's lock).
  void Complete(size_t task_index, core::Observation obs);

  // Finalizes rows not finalized yet: rows with no tasks (every candidate skipped) and rows left
  // incomplete by an interrupt (a missing trial becomes a default observation: not run).
  void FinalizeRemaining();

 private:
  // Stamps each cell's identity from its task (probe, arm, params, params_key, deadline_s:
  // drivers fill only what they measured), classifies it, then judges each candidate against
  // the row's control cells (or records its planned SKIP).
  void FinalizeRow(size_t row);
  // Re-reads each non-control trial's refusal against every control trial of the row (the
  // probe's classify.live_target, core/live_target.h), before the trials are aggregated.
  void ApplyLiveTarget(const core::ProbeDescriptor& probe,
                       std::vector<std::vector<core::Cell>>& arm_trials) const;
  bool IsControl(const std::string& arm) const;

  const Plan& plan_;
  const std::vector<core::ProbeDescriptor>& probes_;
  core::Matrix& matrix_;
  RunObserver& observer_;
  std::mutex mu_;
  std::vector<int> pending_;
  std::vector<bool> done_;
  size_t trials_;
  std::span<const core::Expectation> expectations_;
  std::string today_;
  std::vector<std::vector<core::Observation>> results_;  // per task, in the order trials ended
};

}  // namespace sandprobe::runner
