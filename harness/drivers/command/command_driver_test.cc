#include "drivers/command/command_driver.h"

#include <gtest/gtest.h>

#include "drivers/driver.h"

namespace sandprobe::drivers {
namespace {

DriverContext Context() { return DriverContext{"00112233aabbccdd", SANDPROBE_REAPER, 1, "sp-test"}; }

TEST(CommandDriverTest, SubstitutesScriptAsOneArgumentAndPlantsEnv) {
  CommandDriver d("command", {"sh", "-c", "{script}"}, false, Context());
  ASSERT_TRUE(d.Prepare());
  std::atomic<bool> never{false};
  Invocation inv{"x.y",
                 "i1",
                 "echo \"@@sandprobe 00112233aabbccdd {\\\"kind\\\":\\\"result\\\","
                 "\\\"outcome\\\":\\\"$SANDPROBE_CANARY_X\\\"}\"",
                 5,
                 {{"SANDPROBE_CANARY_X", "planted"}}};
  auto obs = d.Execute(inv, never);
  EXPECT_EQ(obs.ending, core::Ending::kExited);
  ASSERT_TRUE(obs.result) << obs.stdout_head << obs.stderr_head;
  EXPECT_EQ((*obs.result)["outcome"], "planted");
  EXPECT_EQ(obs.probe, "x.y");
  EXPECT_EQ(obs.driver_facts["ended_by"], "sandbox");
}

TEST(CommandDriverTest, MissingBinaryIsASetupErrorWithAHint) {
  CommandDriver d("command", {"bwrap-not-installed", "{script}"}, false, Context());
  auto r = d.Prepare();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("bwrap-not-installed"), std::string::npos);
  EXPECT_FALSE(r.error().hint.empty());
}

TEST(CommandDriverTest, FactoryKnowsLocalCommandAndDocker) {
  core::Manifest m;
  m.driver = "kubernetes";
  m.source_path = "k.yaml";
  auto d = MakeDriver(m, Context());
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("kubernetes"), std::string::npos);
  m.driver = "local";
  auto local = MakeDriver(m, Context());
  ASSERT_TRUE(local);
  EXPECT_EQ((*local)->kind(), "local");
}

}  // namespace
}  // namespace sandprobe::drivers
