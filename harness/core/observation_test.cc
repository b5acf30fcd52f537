#include "core/observation.h"

#include <gtest/gtest.h>

#include "core/facts.h"

namespace sandprobe::core {
namespace {

// The harness's findings are typed on the observation and shown among the driver facts, under
// the keys reports have always used; a report read back splits them out again.
TEST(ObservationTest, HarnessFindingsAreReportedAmongTheFactsAndReadBack) {
  Observation o;
  o.driver_facts = {{"oom_killed", false}};
  EXPECT_EQ(o.ReportedFacts(), nlohmann::json({{"oom_killed", false}}));
  o.not_judged = "a policy filters packets";
  o.canary_not_planted = true;
  const nlohmann::json shown = o.ReportedFacts();
  EXPECT_EQ(shown, nlohmann::json({{"oom_killed", false},
                                   {fact::kNotJudged, "a policy filters packets"},
                                   {fact::kCanaryNotPlanted, true}}));
  Observation back;
  back.SetReportedFacts(shown);
  EXPECT_EQ(back.driver_facts, o.driver_facts);
  EXPECT_EQ(back.not_judged, o.not_judged);
  EXPECT_TRUE(back.canary_not_planted);
  EXPECT_EQ(back.ReportedFacts(), shown);
}

TEST(ObservationTest, ReadBackKeepsOtherShapesAsFactsSoTheReportReRendersAsItWas) {
  const nlohmann::json odd = {{fact::kNotJudged, 3}, {fact::kCanaryNotPlanted, false}};
  Observation o;
  o.SetReportedFacts(odd);
  EXPECT_EQ(o.not_judged, "");
  EXPECT_FALSE(o.canary_not_planted);
  EXPECT_EQ(o.ReportedFacts(), odd);
  o.SetReportedFacts(nullptr);
  EXPECT_TRUE(o.driver_facts.is_null());
  EXPECT_TRUE(o.ReportedFacts().is_null());
}

}  // namespace
}  // namespace sandprobe::core
