// Classification from observation to exposure: precedence of facts over self-reports.
#include "core/classify.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

ProbeDescriptor NetProbe() {
  ProbeDescriptor p;
  p.id = "net.tcp-by-ip";
  p.classify.outcomes = {{"reached", Exposure::kExposed},
                         {"blocked", Exposure::kContained},
                         {"error", Exposure::kUnknown}};
  return p;
}

ProbeDescriptor LoopProbe() {
  ProbeDescriptor p;
  p.id = "res.cpu-loop";
  p.classify.killed = Exposure::kContained;
  p.classify.deadline = Exposure::kExposed;
  return p;
}

Observation Exited(int code, std::optional<nlohmann::json> result = std::nullopt) {
  Observation o;
  o.ending = Ending::kExited;
  o.exit_code = code;
  o.result = std::move(result);
  return o;
}

TEST(ClassifyTest, DeclaredOutcomeWithEvidence) {
  auto c = Classify(NetProbe(), Exited(0, nlohmann::json{{"kind", "result"},
                                                         {"outcome", "blocked"},
                                                         {"evidence", "positive"},
                                                         {"errno", "ENETUNREACH"}}));
  EXPECT_EQ(c.exposure, Exposure::kContained);
  EXPECT_EQ(c.evidence, Evidence::kPositive);
  EXPECT_EQ(c.label, "blocked");
  EXPECT_NE(c.reason.find("ENETUNREACH"), std::string::npos);
}

TEST(ClassifyTest, ExposedOutcomeIsUppercase) {
  auto c =
      Classify(NetProbe(), Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "reached"}}));
  EXPECT_EQ(c.exposure, Exposure::kExposed);
  EXPECT_EQ(c.label, "REACHED");
}

TEST(ClassifyTest, UndeclaredOutcomeIsUnknown) {
  auto c = Classify(NetProbe(), Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "200"}}));
  EXPECT_EQ(c.exposure, Exposure::kUnknown);
}

TEST(ClassifyTest, CanaryHitBeatsSelfReport) {
  Observation o = Exited(0, nlohmann::json{{"kind", "result"}, {"outcome", "blocked"}});
  o.canary_hits.push_back({"tcp", "127.0.0.1:5555", "SANDPROBE"});
  auto c = Classify(NetProbe(), o);
  EXPECT_EQ(c.exposure, Exposure::kExposed);
  EXPECT_EQ(c.evidence, Evidence::kPositive);
}

TEST(ClassifyTest, MissingResultIsNeverContained) {
  for (int code : {0, 1, 2}) {
    auto c = Classify(NetProbe(), Exited(code));
    EXPECT_EQ(c.exposure, Exposure::kUnknown) << code;
  }
}

TEST(ClassifyTest, KillEndingsFollowDeclaredRule) {
  for (int code : {124, 137, 143}) {
    EXPECT_EQ(Classify(LoopProbe(), Exited(code)).exposure, Exposure::kContained) << code;
    EXPECT_EQ(Classify(NetProbe(), Exited(code)).exposure, Exposure::kUnknown) << code;
  }
  Observation sig;
  sig.ending = Ending::kSignaled;
  sig.signal = 9;
  EXPECT_EQ(Classify(LoopProbe(), sig).exposure, Exposure::kContained);
  EXPECT_EQ(Classify(LoopProbe(), sig).label, "killed (signal 9)");
}

TEST(ClassifyTest, DeadlineIsExposedForTheLoop) {
  Observation o;
  o.ending = Ending::kDeadline;
  o.deadline_s = 15;
  o.records.push_back({{"kind", "progress"}, {"elapsed_s", 14}});
  auto c = Classify(LoopProbe(), o);
  EXPECT_EQ(c.exposure, Exposure::kExposed);
  EXPECT_NE(c.reason.find("elapsed_s"), std::string::npos) << c.reason;
  EXPECT_EQ(Classify(NetProbe(), o).exposure, Exposure::kUnknown);
}

TEST(ClassifyTest, OomFactBeatsSilence) {
  ProbeDescriptor balloon;
  balloon.classify.outcomes = {{"target_reached", Exposure::kExposed},
                               {"memory_error", Exposure::kContained}};
  balloon.classify.killed = Exposure::kUnknown;  // even a probe unsure about kills trusts the fact
  Observation o = Exited(137);
  o.driver_facts["oom_killed"] = true;
  o.records.push_back({{"kind", "progress"}, {"allocated_mib", 240}});
  balloon.classify.killed = Exposure::kContained;
  auto c = Classify(balloon, o);
  EXPECT_EQ(c.exposure, Exposure::kContained);
  EXPECT_EQ(c.label, "OOM killed");
  EXPECT_NE(c.reason.find("OOMKilled"), std::string::npos);
  EXPECT_NE(c.reason.find("240"), std::string::npos);
}

TEST(ClassifyTest, ExposedResultIsALeakEvenIfKilledLater) {
  ProbeDescriptor balloon;
  balloon.classify.outcomes = {{"target_reached", Exposure::kExposed}};
  balloon.classify.killed = Exposure::kContained;
  Observation o = Exited(137, nlohmann::json{{"kind", "result"}, {"outcome", "target_reached"}});
  o.driver_facts["oom_killed"] = true;
  EXPECT_EQ(Classify(balloon, o).exposure, Exposure::kExposed);
}

TEST(ClassifyTest, HarnessProblemsAreUnknown) {
  for (Ending e : {Ending::kHarnessError, Ending::kInterrupted, Ending::kNotRun}) {
    Observation o;
    o.ending = e;
    o.result = nlohmann::json{{"kind", "result"}, {"outcome", "blocked"}};
    EXPECT_EQ(Classify(NetProbe(), o).exposure, Exposure::kUnknown) << ToString(e);
  }
}

}  // namespace
}  // namespace sandprobe::core
