#include "runner/row_book.h"

#include <algorithm>

#include "core/classify.h"
#include "core/facts.h"
#include "core/live_target.h"
#include "core/trials.h"

namespace sandprobe::runner {

RowBook::RowBook(const Plan& plan, const std::vector<core::ProbeDescriptor>& probes,
                 core::Matrix& matrix, RunObserver& observer, size_t trials,
                 std::span<const core::Expectation> expectations, std::string today)
    : plan_(plan),
      probes_(probes),
      matrix_(matrix),
      observer_(observer),
      pending_(plan.rows.size(), 0),
      done_(plan.rows.size(), false),
      trials_(std::max<size_t>(trials, 1)),
      expectations_(expectations),
      today_(std::move(today)),
      results_(plan.tasks.size()) {
  for (const Task& t : plan.tasks) pending_[t.row] += static_cast<int>(trials_);
}

void RowBook::Complete(size_t task_index, core::Observation obs) {
  std::lock_guard lock(mu_);
  results_[task_index].push_back(std::move(obs));
  const size_t row = plan_.tasks[task_index].row;
  if (--pending_[row] == 0) FinalizeRow(row);
}

void RowBook::FinalizeRemaining() {
  std::lock_guard lock(mu_);
  for (size_t row = 0; row < done_.size(); ++row) {
    if (!done_[row]) FinalizeRow(row);
  }
}

bool RowBook::IsControl(const std::string& arm) const {
  const core::ArmInfo* info = matrix_.FindArm(arm);
  return info != nullptr && info->role == core::ArmRole::kControl;
}

void RowBook::ApplyLiveTarget(const core::ProbeDescriptor& probe,
                              std::vector<std::vector<core::Cell>>& arm_trials) const {
  if (!probe.classify.live_target) return;
  // Every control trial counts: one that reached the target shows the listener lived.
  std::vector<core::ArmView> controls;
  for (const std::vector<core::Cell>& trials : arm_trials) {
    for (const core::Cell& t : trials) {
      if (IsControl(t.observation.arm)) {
        controls.push_back({t.observation.arm, &t.observation, t.classification});
      }
    }
  }
  for (std::vector<core::Cell>& trials : arm_trials) {
    for (core::Cell& t : trials) {
      if (IsControl(t.observation.arm)) continue;
      if (auto re = core::RefusedAtLiveTarget(probe, controls, t.observation, t.classification)) {
        t.classification = std::move(*re);
      }
    }
  }
}

void RowBook::FinalizeRow(size_t row) {
  done_[row] = true;
  const core::Row& r = plan_.rows[row];
  const core::ProbeDescriptor& probe =
      *std::ranges::find(probes_, r.probe, &core::ProbeDescriptor::id);
  const size_t first_cell = matrix_.cells.size();
  std::vector<std::vector<core::Cell>> arm_trials;  // per task of this row, in task order
  for (size_t i = 0; i < plan_.tasks.size(); ++i) {
    const Task& task = plan_.tasks[i];
    if (task.row != row) continue;
    std::vector<core::Observation>& observed = results_[i];
    // Only an interrupt leaves trials missing: each becomes "not run", never a pass.
    observed.resize(std::max(observed.size(), trials_));
    std::vector<core::Cell>& trials = arm_trials.emplace_back();
    for (core::Observation& obs : observed) {
      obs.probe = task.probe;
      obs.arm = task.arm;
      obs.params = task.params;
      obs.params_key = task.params_key;
      obs.deadline_s = task.deadline_s;
      core::Classification cls = core::Classify(probe, obs);
      trials.push_back({std::move(obs), std::move(cls)});
    }
  }
  ApplyLiveTarget(probe, arm_trials);
  for (std::vector<core::Cell>& trials : arm_trials) {
    matrix_.cells.push_back(core::AggregateTrials(std::move(trials)));
  }
  std::vector<core::ArmView> controls;
  for (size_t c = first_cell; c < matrix_.cells.size(); ++c) {
    const core::Cell& cell = matrix_.cells[c];
    if (IsControl(cell.observation.arm)) {
      controls.push_back({cell.observation.arm, &cell.observation, cell.classification});
    }
  }
  for (const core::ArmInfo& arm : matrix_.arms) {
    if (arm.role != core::ArmRole::kCandidate) continue;
    auto skip = std::ranges::find_if(plan_.skips, [&](const PlannedSkip& s) {
      return s.probe == r.probe && s.candidate == arm.name;
    });
    core::Verdict v;
    if (skip != plan_.skips.end()) {
      v = core::Judge(probe, {}, {}, core::Applicability{false, skip->reason});
    } else {
      const core::Cell* cell = nullptr;
      for (size_t c = first_cell; c < matrix_.cells.size(); ++c) {
        if (matrix_.cells[c].observation.arm == arm.name) cell = &matrix_.cells[c];
      }
      if (cell == nullptr) continue;
      const std::string& not_judged = cell->observation.not_judged;
      v = !not_judged.empty()
              ? core::Judge(probe, {}, {},
                            core::Applicability{false, "reported, not judged: " + not_judged})
              : core::Judge(probe, controls, {arm.name, &cell->observation, cell->classification});
    }
    matrix_.verdicts.push_back({r.probe, arm.name, std::move(v)});
    core::Accept(matrix_.verdicts.back(), expectations_, today_);
  }
  observer_.OnRow(matrix_, r.probe);
}

}  // namespace sandprobe::runner
