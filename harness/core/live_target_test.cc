// Table test of RefusedAtLiveTarget(): which refusals a control's reach turns into containment.
#include "core/live_target.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

ProbeDescriptor TcpProbe() {
  ProbeDescriptor p;
  p.id = "net.tcp-by-ip";
  p.classify.outcomes = {{"reached", Exposure::kExposed},
                         {"refused", Exposure::kExposed},
                         {"blocked", Exposure::kContained}};
  p.classify.live_target = LiveTargetRule{"refused", {"reached"}, "target"};
  return p;
}

Observation Result(const std::string& arm, const std::string& outcome, const std::string& target,
                   const std::string& params_key = R"({"target":"{canary.tcp}"})") {
  Observation o;
  o.arm = arm;
  o.params_key = params_key;
  o.ending = Ending::kExited;
  o.result = nlohmann::json{{"kind", "result"},
                            {"outcome", outcome},
                            {"evidence", "positive"},
                            {"errno", outcome == "refused" ? "ECONNREFUSED" : ""},
                            {"target", target}};
  return o;
}

const Classification kRefused{Exposure::kExposed, Evidence::kPositive, "REFUSED",
                              "outcome refused (ECONNREFUSED)"};

struct Case {
  const char* name;
  std::string control_outcome;  // "" = no control ran
  std::string control_target;
  std::string control_key;
  bool control_hit;    // the canary logged the control
  bool candidate_hit;  // the canary logged the candidate
  bool rule;           // the probe declares live_target
  std::string cand_outcome;
  bool want_contained;
};

TEST(LiveTargetTest, Table) {
  const std::string key = R"({"target":"{canary.tcp}"})";
  const std::string t = "10.253.0.42:7000";
  const Case cases[] = {
      {"control reached the same target", "reached", t, key, false, false, true, "refused", true},
      {"control's canary hit, no reached outcome", "no_echo", t, key, true, false, true, "refused",
       true},
      {"control refused too: nothing lived there", "refused", t, key, false, false, true, "refused",
       false},
      {"control blocked", "blocked", t, key, false, false, true, "refused", false},
      {"no control ran", "", t, key, false, false, true, "refused", false},
      {"control reached another target", "reached", "10.253.0.43:7000", key, false, false, true,
       "refused", false},
      {"control with other parameters", "reached", t, R"({"target":"x"})", false, false, true,
       "refused", false},
      {"the probe declares no rule", "reached", t, key, false, false, false, "refused", false},
      {"the candidate reached: a leak stays a leak", "reached", t, key, false, false, true,
       "reached", false},
      {"the canary logged the candidate", "reached", t, key, false, true, true, "refused", false},
      {"empty target on both", "reached", "", key, false, false, true, "refused", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ProbeDescriptor probe = TcpProbe();
    if (!c.rule) probe.classify.live_target.reset();
    Observation cand = Result("cand", c.cand_outcome, c.control_target.empty() ? "" : t);
    if (c.candidate_hit) cand.canary_hits.push_back(CanaryHit{});
    const Classification cls =
        c.cand_outcome == "refused"
            ? kRefused
            : Classification{Exposure::kExposed, Evidence::kPositive, "REACHED", "echo"};
    std::vector<Observation> ctl_obs;
    std::vector<ArmView> controls;
    if (!c.control_outcome.empty()) {
      ctl_obs.push_back(Result("control", c.control_outcome, c.control_target, c.control_key));
      if (c.control_hit) ctl_obs.back().canary_hits.push_back(CanaryHit{});
      controls.push_back({"control", &ctl_obs.back(), kRefused});
    }
    const auto got = RefusedAtLiveTarget(probe, controls, cand, cls);
    ASSERT_EQ(got.has_value(), c.want_contained);
    if (got) {
      EXPECT_EQ(got->exposure, Exposure::kContained);
      EXPECT_EQ(got->evidence, Evidence::kPositive);
      EXPECT_EQ(got->label, "refused (filtered)");
      EXPECT_NE(got->reason.find(t), std::string::npos) << got->reason;
      EXPECT_NE(got->reason.find("control control"), std::string::npos) << got->reason;
      EXPECT_NE(got->reason.find("ECONNREFUSED"), std::string::npos) << got->reason;
    }
  }
}

TEST(LiveTargetTest, AContainedOrUnknownCandidateIsLeftAlone) {
  const ProbeDescriptor probe = TcpProbe();
  const Observation cand = Result("cand", "refused", "10.0.0.1:1");
  const Observation ctl = Result("control", "reached", "10.0.0.1:1");
  const ArmView controls[] = {{"control", &ctl, kRefused}};
  for (Exposure e : {Exposure::kContained, Exposure::kUnknown}) {
    EXPECT_FALSE(RefusedAtLiveTarget(probe, controls, cand,
                                     Classification{e, Evidence::kPositive, "x", "y"}));
  }
}

// net.http-by-name and net.k8s-api name the addresses a name resolved to: one address on both
// sides is one target; two are not (the refusal may have come from the other one).
TEST(LiveTargetTest, AListOfExactlyOneAddress) {
  ProbeDescriptor probe = TcpProbe();
  probe.classify.live_target->target = "addresses";
  auto with = [](const std::string& arm, const char* outcome, nlohmann::json addresses) {
    Observation o = Result(arm, outcome, "");
    (*o.result)["addresses"] = std::move(addresses);
    return o;
  };
  const struct {
    nlohmann::json control, candidate;
    bool want;
  } cases[] = {
      {{"10.0.0.1"}, {"10.0.0.1"}, true},
      {{"10.0.0.1", "10.0.0.2"}, {"10.0.0.1", "10.0.0.2"}, false},
      {{"10.0.0.1"}, {"10.0.0.2"}, false},
      {nlohmann::json::array(), nlohmann::json::array(), false},
      {{1}, {1}, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.candidate.dump());
    const Observation ctl = with("control", "reached", c.control);
    const Observation cand = with("cand", "refused", c.candidate);
    const ArmView controls[] = {{"control", &ctl, kRefused}};
    EXPECT_EQ(RefusedAtLiveTarget(probe, controls, cand, kRefused).has_value(), c.want);
  }
}

}  // namespace
}  // namespace sandprobe::core
