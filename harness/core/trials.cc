#include "core/trials.h"

#include <fmt/format.h>

#include <algorithm>

namespace sandprobe::core {
namespace {

// Lower is shown first: a leak beats a harness failure beats missing evidence beats containment.
int Rank(const Cell& c) {
  if (c.classification.exposure == Exposure::kExposed) return 0;
  if (c.observation.ending == Ending::kHarnessError) return 1;
  if (c.classification.exposure == Exposure::kUnknown) return 2;
  return 3;
}

}  // namespace

Cell AggregateTrials(std::vector<Cell> trials) {
  if (trials.empty()) return Cell{};
  if (trials.size() == 1) return std::move(trials.front());
  size_t shown = 0;
  for (size_t i = 1; i < trials.size(); ++i) {
    if (Rank(trials[i]) < Rank(trials[shown])) shown = i;
  }
  std::vector<Trial> summary;
  summary.reserve(trials.size());
  for (const Cell& c : trials) {
    summary.push_back({c.observation.invocation, c.classification.exposure,
                       c.classification.evidence, c.classification.label});
  }
  Cell out = std::move(trials[shown]);
  out.trials = std::move(summary);
  return out;
}

bool Flaky(const Cell& cell) {
  for (const Trial& t : cell.trials) {
    if (t.label != cell.trials.front().label || t.exposure != cell.trials.front().exposure) {
      return true;
    }
  }
  return false;
}

std::string TrialCounts(const Cell& cell) {
  std::vector<std::pair<std::string, size_t>> counts;
  for (const Trial& t : cell.trials) {
    auto it = std::ranges::find(counts, t.label, &std::pair<std::string, size_t>::first);
    if (it == counts.end()) {
      counts.emplace_back(t.label, 1);
    } else {
      ++it->second;
    }
  }
  std::ranges::stable_sort(counts, std::greater<>{}, &std::pair<std::string, size_t>::second);
  std::string out;
  for (const auto& [label, n] : counts) {
    out += fmt::format("{}{} {}/{}", out.empty() ? "" : ", ", label, n, cell.trials.size());
  }
  return out;
}

}  // namespace sandprobe::core
