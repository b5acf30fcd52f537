// Repeat trials (`sandprobe run --repeat N`): every invocation runs N times, and the N classified
// observations become the one cell the matrix shows. One leak in N is a FAIL (never
// retry-until-green): the cell shown is an exposed trial when there is one, so judge() sees it.
// A control validates a row when it showed exposure in at least one trial. Pure; table-tested.
// See docs/design.md "Repeat trials".
#pragma once

#include <string>
#include <vector>

#include "core/matrix.h"

namespace sandprobe::core {

// The cell of N trials (N >= 1; trials in the order they ended). The cell shown is the first
// exposed trial, else the first whose harness/driver failed, else the first unknown, else the
// first; its `trials` lists every trial (empty when N == 1, so a single run is unchanged).
// An empty input gives a default (not run) cell.
Cell AggregateTrials(std::vector<Cell> trials);

// The trials of a cell disagreed: more than one distinct label or exposure among them.
bool Flaky(const Cell& cell);

// "blocked 9/10, REACHED 1/10": each distinct label with its count over the trials, most
// frequent first (ties in the order first seen). "" when the cell ran once.
std::string TrialCounts(const Cell& cell);

}  // namespace sandprobe::core
