// What a run costs the machine: samples of the CPU counters the kernel keeps, taken by the runner
// before the first invocation and after the last (core::RunCost).
#pragma once

#include <optional>
#include <string_view>

#include "core/matrix.h"

namespace sandprobe::runner {

struct CostSample {
  double steady_s = 0;        // drivers::SteadySeconds()
  double machine_cpu_s = 0;   // /proc/stat "cpu" line: user+nice+system+irq+softirq (no steal)
  double harness_cpu_s = 0;   // getrusage(RUSAGE_SELF): user + system
  double children_cpu_s = 0;  // getrusage(RUSAGE_CHILDREN): user + system of waited-for children
  int cpus = 0;               // sysconf(_SC_NPROCESSORS_ONLN)
};

// Busy CPU seconds of every CPU from /proc/stat's text (its first "cpu " line, in `ticks_per_s`
// units: sysconf(_SC_CLK_TCK)); nullopt when the line is missing or malformed.
std::optional<double> ProcStatBusySeconds(std::string_view proc_stat, double ticks_per_s);

// Now. A counter that cannot be read (no /proc) stays 0.
CostSample SampleCost();

// b - a.
core::RunCost CostBetween(const CostSample& a, const CostSample& b);

}  // namespace sandprobe::runner
