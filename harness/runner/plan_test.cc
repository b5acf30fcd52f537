// Planning: identical parameters for control and candidate, one control run per parameter set,
// SKIP for probes that do not apply, deadlines from the candidate's claimed timeout.
#include "runner/plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace sandprobe::runner {
namespace {

std::vector<core::ProbeDescriptor> Probes() {
  core::ProbeDescriptor balloon;
  balloon.id = "res.memory-balloon";
  balloon.label = "memory balloon";
  balloon.drivers = {"all"};
  balloon.params["target_mib"] = core::ParamSpec{512, "", "memory", 2.0, "MiB"};
  core::ProbeDescriptor tcp;
  tcp.id = "net.tcp-by-ip";
  tcp.label = "raw ip";
  tcp.drivers = {"all"};
  tcp.params["target"] = core::ParamSpec{"", "", "", 1, ""};
  core::ProbeDescriptor admission;
  admission.id = "platform.runtime-class";
  admission.label = "runtimeClassName";
  admission.drivers = {"kubernetes"};
  return {balloon, tcp, admission};
}

core::Manifest M(std::string name, std::string driver, std::optional<uint64_t> memory = {},
                 std::optional<double> timeout = {}) {
  core::Manifest m;
  m.name = std::move(name);
  m.driver = std::move(driver);
  m.limits.memory_bytes = memory;
  m.limits.timeout_s = timeout;
  return m;
}

core::Suite DefaultSuite() {
  core::Suite s;
  s.name = "t";
  s.entries = {{"res.memory-balloon", core::Level::kRequired, nlohmann::json::object()},
               {"net.tcp-by-ip", core::Level::kRequired, {{"target", "{canary.tcp}"}}},
               {"platform.runtime-class", core::Level::kRequired, nlohmann::json::object()}};
  return s;
}

TEST(PlanTest, ControlsShareParamsAndRunOncePerParameterSet) {
  auto plan = PlanRun(DefaultSuite(), Probes(),
                      {M("small", "command", 64ull << 20, 5), M("big", "command", 256ull << 20),
                       M("same", "command", 64ull << 20, 20)},
                      {M("local", "local")}, {{"canary.tcp", "127.0.0.1:9"}}, Timing{10, 5});
  ASSERT_TRUE(plan) << plan.error();
  std::vector<const Task*> balloon_controls, balloon_cands;
  for (const Task& t : plan->tasks) {
    if (t.probe != "res.memory-balloon") continue;
    (t.control ? balloon_controls : balloon_cands).push_back(&t);
  }
  ASSERT_EQ(balloon_cands.size(), 3u);
  ASSERT_EQ(balloon_controls.size(), 2u);  // 128 MiB and 512 MiB targets
  EXPECT_EQ(balloon_controls[0]->params["target_mib"], 128);
  EXPECT_DOUBLE_EQ(balloon_controls[0]->deadline_s, 25);  // the longest of 5+5 and 20+5
  EXPECT_EQ(balloon_controls[1]->params["target_mib"], 512);
  EXPECT_DOUBLE_EQ(balloon_cands[1]->deadline_s, 15);  // default 10 + grace 5
  // Controls come before candidates within a row.
  EXPECT_TRUE(plan->tasks[0].control);
  for (const Task& t : plan->tasks) {
    if (t.probe == "net.tcp-by-ip") {
      EXPECT_EQ(t.params["target"], "127.0.0.1:9");
    }
  }
}

TEST(PlanTest, NotApplicableIsSkippedForEveryCandidate) {
  auto plan = PlanRun(DefaultSuite(), Probes(), {M("bwrap", "command")}, {M("local", "local")},
                      {{"canary.tcp", "x"}}, {});
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->skips.size(), 1u);
  EXPECT_EQ(plan->skips[0].probe, "platform.runtime-class");
  EXPECT_NE(plan->skips[0].reason.find("kubernetes"), std::string::npos);
  for (const Task& t : plan->tasks) EXPECT_NE(t.probe, "platform.runtime-class");
  EXPECT_EQ(plan->rows.size(), 3u);
  EXPECT_EQ(plan->arms[0].role, core::ArmRole::kControl);
}

TEST(PlanTest, ControlBudgetRefusesAttacksTheHostCannotTake) {
  auto plan = PlanRun(DefaultSuite(), Probes(), {M("huge", "command", 64ull << 30)},
                      {M("local", "local")}, {{"canary.tcp", "x"}}, {});
  ASSERT_TRUE(plan);
  auto refused = CheckControlBudget(*plan, Probes(), HostBudget{8192, 8192});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("target_mib=131072"), std::string::npos) << refused.error();
  EXPECT_TRUE(CheckControlBudget(*plan, Probes(), HostBudget{200000, 0}));
  auto small = PlanRun(DefaultSuite(), Probes(), {M("c", "command", 256ull << 20)},
                       {M("local", "local")}, {{"canary.tcp", "x"}}, {});
  EXPECT_TRUE(CheckControlBudget(*small, Probes(), HostBudget{1024, 1024}));
}

TEST(PlanTest, Errors) {
  core::Suite unknown = DefaultSuite();
  unknown.entries.push_back({"net.nope", core::Level::kRequired, {}});
  auto a = PlanRun(unknown, Probes(), {M("c", "command")}, {}, {{"canary.tcp", "x"}}, {});
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().find("net.nope"), std::string::npos);
  auto b = PlanRun(DefaultSuite(), Probes(), {M("x", "command")}, {M("x", "local")},
                   {{"canary.tcp", "x"}}, {});
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().find("'x'"), std::string::npos);
  auto c = PlanRun(DefaultSuite(), Probes(), {}, {}, {}, {});
  EXPECT_FALSE(c);
  auto d = PlanRun(DefaultSuite(), Probes(), {M("c", "command")}, {}, {}, {});
  ASSERT_FALSE(d);  // {canary.tcp} unresolved
  EXPECT_NE(d.error().find("canary.tcp"), std::string::npos);
}

}  // namespace
}  // namespace sandprobe::runner

namespace sandprobe::runner {
namespace {

// `render` shows what a run submits: its invocations carry the very deadline PlanRun gives the
// same arm's tasks, and only the probes that apply to the arm's driver.
TEST(PlanTest, RenderAndRunGiveAnArmTheSameDeadlineAndScriptsInSuiteOrder) {
  const Timing timing{12, 3};
  const std::map<std::string, std::string> subs = {{"canary.tcp", "127.0.0.1:9"}};
  for (const core::Manifest& arm :
       {M("claims", "kubernetes", 64ull << 20, 7), M("silent", "kubernetes", 64ull << 20),
        M("cmd", "command", {}, 30)}) {
    auto plan = PlanRun(DefaultSuite(), Probes(), {arm}, {}, subs, timing);
    ASSERT_TRUE(plan) << plan.error();
    auto planned =
        PlanArmInvocations(DefaultSuite(), Probes(), arm, subs, "PREAMBLE\n", "render", timing);
    ASSERT_TRUE(planned) << planned.error();
    ASSERT_EQ(planned->size(), plan->tasks.size()) << arm.name;
    for (size_t i = 0; i < planned->size(); ++i) {
      const PlannedInvocation& p = (*planned)[i];
      EXPECT_EQ(p.probe, plan->tasks[i].probe);
      EXPECT_DOUBLE_EQ(p.deadline_s, plan->tasks[i].deadline_s) << arm.name << " " << p.probe;
      EXPECT_DOUBLE_EQ(p.deadline_s, ArmDeadline(arm, timing));
      EXPECT_EQ(p.invocation, fmt::format("i{:03d}", i));
      EXPECT_NE(p.script.find("PREAMBLE\n"), std::string::npos);
    }
  }
  EXPECT_DOUBLE_EQ(ArmDeadline(M("claims", "kubernetes", {}, 7), timing), 10);
  EXPECT_DOUBLE_EQ(ArmDeadline(M("silent", "kubernetes"), timing), 15);
}

TEST(PlanTest, ArmInvocationsOfOneProbeAndErrors) {
  const std::map<std::string, std::string> subs = {{"canary.tcp", "127.0.0.1:9"}};
  auto one = PlanArmInvocations(DefaultSuite(), Probes(), M("k", "kubernetes"), subs, "", "n",
                                Timing{}, "net.tcp-by-ip");
  ASSERT_TRUE(one) << one.error();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().probe, "net.tcp-by-ip");
  core::Suite unknown = DefaultSuite();
  unknown.entries.push_back({"no.such-probe", core::Level::kRequired, nlohmann::json::object()});
  auto bad = PlanArmInvocations(unknown, Probes(), M("k", "kubernetes"), subs, "", "n", Timing{});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "suite names unknown probe no.such-probe");
}

}  // namespace
}  // namespace sandprobe::runner
