// The run's CPU account (runner/cost.h): /proc/stat's first line read as busy seconds.
#include "runner/cost.h"

#include <gtest/gtest.h>

namespace sandprobe::runner {
namespace {

TEST(CostTest, ProcStatBusySecondsTable) {
  const struct {
    const char* text;
    double ticks_per_s;
    std::optional<double> busy_s;
  } cases[] = {
      // user nice system idle iowait irq softirq steal guest guest_nice: idle, iowait and steal
      // are not busy; guest time is already inside user.
      {"cpu  100 20 30 5000 70 1 2 3 40 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n", 100, 1.53},
      {"cpu  100 0 100 0 0 0 0 0\n", 200, 1.0},  // an older kernel: eight fields
      {"cpu  1 2 3\n", 100, std::nullopt},       // too few
      {"cpu0 1 2 3 4 5 6 7 8\n", 100, std::nullopt},
      {"intr 1 2 3\n", 100, std::nullopt},
      {"cpu  a b c d e f g h\n", 100, std::nullopt},
      {"cpu  1 2 3 4 5 6 7 8\n", 0, std::nullopt},
      {"", 100, std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const auto got = ProcStatBusySeconds(c.text, c.ticks_per_s);
    ASSERT_EQ(got.has_value(), c.busy_s.has_value());
    if (got) {
      EXPECT_NEAR(*got, *c.busy_s, 1e-9);
    }
  }
}

TEST(CostTest, SamplesOfThisMachineMoveForward) {
  const CostSample a = SampleCost();
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + i;  // some CPU of our own
  const core::RunCost c = CostBetween(a, SampleCost());
  EXPECT_GT(c.wall_s, 0);
  EXPECT_GT(c.harness_cpu_s, 0);
  EXPECT_GT(c.machine_cpu_s, 0);
  EXPECT_GE(c.cpus, 1);
}

}  // namespace
}  // namespace sandprobe::runner
