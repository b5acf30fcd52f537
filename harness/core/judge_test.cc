// Full table test of Judge(): control exposure x candidate exposure x harness error x
// applicability, plus parameter matching, requires_control and multiple controls.
#include <gtest/gtest.h>

#include "core/verdict.h"

namespace sandprobe::core {
namespace {

struct Case {
  const char* name;
  std::optional<Exposure> control;  // nullopt: no control ran
  Exposure candidate;
  bool harness_error;
  bool applies;
  VerdictKind want;
};

ArmView View(const std::string& arm, const Observation& obs, Exposure e) {
  return ArmView{arm, &obs, Classification{e, Evidence::kPositive, "label", "why"}};
}

TEST(JudgeTest, Table) {
  using E = Exposure;
  using V = VerdictKind;
  const Case cases[] = {
      // control exposed
      {"ctl exposed / cand exposed", E::kExposed, E::kExposed, false, true, V::kFail},
      {"ctl exposed / cand contained", E::kExposed, E::kContained, false, true, V::kPass},
      {"ctl exposed / cand unknown", E::kExposed, E::kUnknown, false, true, V::kInconclusive},
      // control contained: a leak is still a leak; containment proves nothing
      {"ctl contained / cand exposed", E::kContained, E::kExposed, false, true, V::kFail},
      {"ctl contained / cand contained", E::kContained, E::kContained, false, true,
       V::kInconclusive},
      {"ctl contained / cand unknown", E::kContained, E::kUnknown, false, true, V::kInconclusive},
      // control unknown
      {"ctl unknown / cand exposed", E::kUnknown, E::kExposed, false, true, V::kFail},
      {"ctl unknown / cand contained", E::kUnknown, E::kContained, false, true, V::kInconclusive},
      {"ctl unknown / cand unknown", E::kUnknown, E::kUnknown, false, true, V::kInconclusive},
      // no control at all
      {"no ctl / cand exposed", std::nullopt, E::kExposed, false, true, V::kFail},
      {"no ctl / cand contained", std::nullopt, E::kContained, false, true, V::kInconclusive},
      // harness error beats everything but applicability
      {"ctl exposed / harness error", E::kExposed, E::kUnknown, true, true, V::kError},
      {"ctl contained / harness error", E::kContained, E::kUnknown, true, true, V::kError},
      {"no ctl / harness error", std::nullopt, E::kUnknown, true, true, V::kError},
      // not applicable
      {"n/a, ctl exposed, cand exposed", E::kExposed, E::kExposed, false, false, V::kSkip},
      {"n/a, harness error", E::kExposed, E::kUnknown, true, false, V::kSkip},
      {"n/a, no ctl", std::nullopt, E::kContained, false, false, V::kSkip},
  };
  ProbeDescriptor probe;
  probe.id = "net.dns";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Observation ctl_obs, cand_obs;
    ctl_obs.params_key = cand_obs.params_key = "{}";
    ctl_obs.ending = Ending::kExited;
    cand_obs.ending = c.harness_error ? Ending::kHarnessError : Ending::kExited;
    cand_obs.harness_error = c.harness_error ? "could not start" : "";
    std::vector<ArmView> controls;
    if (c.control) controls.push_back(View("local", ctl_obs, *c.control));
    const Verdict v = Judge(probe, controls, View("cand", cand_obs, c.candidate),
                            Applicability{c.applies, "Kubernetes-only probe"});
    EXPECT_EQ(ToString(v.kind), ToString(c.want)) << v.reason;
    EXPECT_FALSE(v.reason.empty());
    if (c.want == V::kPass) {
      EXPECT_EQ(v.validated_by, "local");
    } else {
      EXPECT_EQ(v.validated_by, "");
    }
  }
}

TEST(JudgeTest, ControlWithDifferentParamsDoesNotValidate) {
  ProbeDescriptor probe;
  Observation ctl, cand;
  ctl.params_key = R"({"target_mib":512})";
  cand.params_key = R"({"target_mib":128})";
  std::vector<ArmView> controls = {View("local", ctl, Exposure::kExposed)};
  const Verdict v = Judge(probe, controls, View("c", cand, Exposure::kContained));
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_NE(v.reason.find("identical parameters"), std::string::npos) << v.reason;
}

TEST(JudgeTest, AnyExposedControlValidatesAndIsNamed) {
  ProbeDescriptor probe;
  Observation a, b, cand;
  std::vector<ArmView> controls = {View("docker-open", a, Exposure::kContained),
                                   View("local", b, Exposure::kExposed)};
  const Verdict v = Judge(probe, controls, View("c", cand, Exposure::kContained));
  EXPECT_EQ(v.kind, VerdictKind::kPass);
  EXPECT_EQ(v.validated_by, "local");
}

TEST(JudgeTest, ProbeThatNeedsNoControlPassesOnItsOwnEvidence) {
  ProbeDescriptor probe;
  probe.requires_control = false;
  Observation cand;
  const Verdict v = Judge(probe, {}, View("c", cand, Exposure::kContained));
  EXPECT_EQ(v.kind, VerdictKind::kPass);
  EXPECT_NE(v.reason.find("needs no control"), std::string::npos);
}

TEST(JudgeTest, PassReasonNamesAbsenceEvidence) {
  ProbeDescriptor probe;
  Observation ctl, cand;
  std::vector<ArmView> controls = {View("local", ctl, Exposure::kExposed)};
  ArmView c{"c", &cand, Classification{Exposure::kContained, Evidence::kAbsence, "blocked", "t"}};
  const Verdict v = Judge(probe, controls, c);
  EXPECT_EQ(v.kind, VerdictKind::kPass);
  EXPECT_EQ(v.evidence, Evidence::kAbsence);
  EXPECT_NE(v.reason.find("absence evidence"), std::string::npos);
}

}  // namespace
}  // namespace sandprobe::core
