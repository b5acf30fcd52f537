#include "runner/cost.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "drivers/driver.h"

namespace sandprobe::runner {
namespace {

double Seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

double Rusage(int who) {
  struct rusage u {};
  if (getrusage(who, &u) != 0) return 0;
  return Seconds(u.ru_utime) + Seconds(u.ru_stime);
}

}  // namespace

std::optional<double> ProcStatBusySeconds(std::string_view proc_stat, double ticks_per_s) {
  if (!proc_stat.starts_with("cpu ") || ticks_per_s <= 0) return std::nullopt;
  std::istringstream line(std::string(proc_stat.substr(4, proc_stat.find('\n') - 4)));
  // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user/nice).
  // Steal is not work done here: the hypervisor ran someone else while our vCPU waited.
  unsigned long long f[8] = {};
  for (unsigned long long& v : f) {
    if (!(line >> v)) return std::nullopt;
  }
  const unsigned long long busy = f[0] + f[1] + f[2] + f[5] + f[6];
  return static_cast<double>(busy) / ticks_per_s;
}

CostSample SampleCost() {
  CostSample s;
  s.steady_s = drivers::SteadySeconds();
  std::ifstream in("/proc/stat");
  std::string first;
  std::getline(in, first);
  s.machine_cpu_s =
      ProcStatBusySeconds(first + "\n", static_cast<double>(sysconf(_SC_CLK_TCK))).value_or(0);
  s.harness_cpu_s = Rusage(RUSAGE_SELF);
  s.children_cpu_s = Rusage(RUSAGE_CHILDREN);
  s.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return s;
}

core::RunCost CostBetween(const CostSample& a, const CostSample& b) {
  return core::RunCost{.wall_s = b.steady_s - a.steady_s,
                       .cpus = b.cpus,
                       .machine_cpu_s = b.machine_cpu_s - a.machine_cpu_s,
                       .harness_cpu_s = b.harness_cpu_s - a.harness_cpu_s,
                       .children_cpu_s = b.children_cpu_s - a.children_cpu_s};
}

}  // namespace sandprobe::runner
