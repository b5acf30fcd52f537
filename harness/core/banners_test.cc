#include "core/banners.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

Cell MakeCell(std::string probe, std::string arm, Exposure e, nlohmann::json facts = {},
              Evidence evidence = Evidence::kPositive) {
  Cell c;
  c.observation.probe = std::move(probe);
  c.observation.arm = std::move(arm);
  // As a report carries them: the harness's finding not_judged among the facts.
  c.observation.SetReportedFacts(facts.is_null() ? nlohmann::json::object() : std::move(facts));
  c.classification.exposure = e;
  c.classification.evidence = evidence;
  return c;
}

ArmInfo Arm(std::string name, ArmRole role) {
  ArmInfo a;
  a.name = std::move(name);
  a.role = role;
  return a;
}

Matrix TwoArms() {
  Matrix m;
  m.arms.push_back(Arm("k8s-open", ArmRole::kControl));
  m.arms.push_back(Arm("k8s-deny", ArmRole::kCandidate));
  // The row's category decides what is a network row, not the probe id's prefix.
  m.rows = {{"net.dns", "dns", Level::kRequired, "net"},
            {"net.tcp-by-ip", "tcp by ip", Level::kRequired, "net"},
            {"priv.uid", "uid", Level::kRequired, "priv"},
            {"egress.custom", "custom egress", Level::kRequired, "net"},
            {"net.mislabelled", "not a network row", Level::kRequired, "fs"}};
  return m;
}

const nlohmann::json kPolicy = {{"network_policy", "sandprobe-r1-k8s-deny"},
                                {"policy_denies_all_egress", true},
                                {"policy_age_s", 3}};

// One row's cells: the control's (k8s-open) and the candidate's (k8s-deny, with `facts`).
std::vector<Cell> Row(const std::string& probe, Exposure control, Exposure candidate,
                      const nlohmann::json& facts = kPolicy) {
  return {MakeCell(probe, "k8s-open", control), MakeCell(probe, "k8s-deny", candidate, facts)};
}

TEST(BannersTest, PolicyNotEnforcedTable) {
  using E = Exposure;
  struct Case {
    std::string name;
    std::vector<Cell> cells;
    bool want;
  } cases[] = {
      {"blocked arm reached what the control reached", Row("net.dns", E::kExposed, E::kExposed),
       true},
      {"policy held", Row("net.dns", E::kExposed, E::kContained), false},
      {"no policy on the arm: not a policy finding",
       Row("net.dns", E::kExposed, E::kExposed, nlohmann::json()), false},
      {"control not exposed: nothing to compare", Row("net.dns", E::kContained, E::kExposed),
       false},
      {"not a network row", Row("priv.uid", E::kExposed, E::kExposed), false},
      {"category net without the net. prefix is a network row",
       Row("egress.custom", E::kExposed, E::kExposed), true},
      {"a net. prefix in another category is not a network row",
       Row("net.mislabelled", E::kExposed, E::kExposed), false},
      {"unknown is not a leak", Row("net.dns", E::kExposed, E::kUnknown), false},
      {"a policy that does not select the pod: no banner (the note says NOT selected)",
       Row("net.dns", E::kExposed, E::kExposed,
           {{"network_policy", "p"},
            {"policy_denies_all_egress", true},
            {"policy_selects_pod", false}}),
       false},
      {"another policy of the namespace allows egress (policies add up): no banner",
       Row("net.dns", E::kExposed, E::kExposed,
           {{"network_policy", "p"},
            {"policy_denies_all_egress", true},
            {"policy_selects_pod", true},
            {"other_policies_allowing_egress", {"allow-web"}}}),
       false},
      {"a policy that allows some egress as written: no banner (the note names its rules)",
       Row("net.dns", E::kExposed, E::kExposed,
           {{"network_policy", "p"}, {"policy_denies_all_egress", false}, {"policy_age_s", 3}}),
       false},
      {"exposed on absence evidence only: never the banner",
       {MakeCell("net.dns", "k8s-open", E::kExposed),
        MakeCell("net.dns", "k8s-deny", E::kExposed, kPolicy, Evidence::kAbsence)},
       false},
      {"a host-network pod is outside every policy: no banner (a note names it)",
       Row("net.dns", E::kExposed, E::kExposed,
           {{"network_policy", "p"},
            {"policy_denies_all_egress", true},
            {"policy_age_s", 3},
            {"host_network", true}}),
       false},
      {"a cell the arm does not judge (interfaces under a policy) is never a leak",
       Row("net.dns", E::kExposed, E::kExposed,
           {{"network_policy", "p"},
            {"policy_denies_all_egress", true},
            {"policy_age_s", 3},
            {"not_judged", "a policy filters"}}),
       false},
  };
  for (const Case& c : cases) {
    Matrix m = TwoArms();
    m.cells = c.cells;
    const auto banners = PolicyNotEnforcedBanners(m);
    EXPECT_EQ(!banners.empty(), c.want) << c.name;
    if (c.want) {
      ASSERT_EQ(banners.size(), 1u);
      EXPECT_NE(banners[0].find("accepted but not enforced"), std::string::npos);
      EXPECT_NE(banners[0].find("k8s-deny (policy 3s old) reached " + c.cells[0].observation.probe),
                std::string::npos)
          << banners[0];
    }
  }
}

TEST(BannersTest, OneLineForSeveralArmsAndRows) {
  Matrix m = TwoArms();
  m.arms.push_back(Arm("k8s-deny-aged", ArmRole::kCandidate));
  nlohmann::json aged = {
      {"network_policy", "p2"}, {"policy_denies_all_egress", true}, {"policy_age_s", 61.4}};
  m.cells = {MakeCell("net.dns", "k8s-open", Exposure::kExposed),
             MakeCell("net.tcp-by-ip", "k8s-open", Exposure::kExposed),
             MakeCell("net.dns", "k8s-deny", Exposure::kExposed, kPolicy),
             MakeCell("net.tcp-by-ip", "k8s-deny", Exposure::kExposed, kPolicy),
             MakeCell("net.dns", "k8s-deny-aged", Exposure::kExposed, aged)};
  const auto banners = PolicyNotEnforcedBanners(m);
  ASSERT_EQ(banners.size(), 1u);
  EXPECT_NE(banners[0].find("k8s-deny (policy 3s old) reached net.dns, net.tcp-by-ip"),
            std::string::npos)
      << banners[0];
  EXPECT_NE(banners[0].find("k8s-deny-aged (policy 61s old) reached net.dns"), std::string::npos)
      << banners[0];
}

TEST(BannersTest, LateForNewPodsWhenTheSettledTwinHeld) {
  Matrix m = TwoArms();
  m.arms.push_back(Arm("k8s-deny-settled", ArmRole::kCandidate));
  const nlohmann::json old_policy = {
      {"network_policy", "p"}, {"policy_denies_all_egress", true}, {"policy_age_s", 40}};
  const nlohmann::json settled = {{"network_policy", "p2"},
                                  {"policy_denies_all_egress", true},
                                  {"policy_age_s", 41},
                                  {"pod_settle_s", 5}};
  m.cells = {
      MakeCell("net.dns", "k8s-open", Exposure::kExposed),
      MakeCell("net.tcp-by-ip", "k8s-open", Exposure::kExposed),
      // dns: fresh pod leaked, settled pod held -> late
      MakeCell("net.dns", "k8s-deny", Exposure::kExposed, old_policy),
      MakeCell("net.dns", "k8s-deny-settled", Exposure::kContained, settled, Evidence::kAbsence),
      // tcp: leaked in both -> not enforced at all
      MakeCell("net.tcp-by-ip", "k8s-deny", Exposure::kExposed, old_policy),
      MakeCell("net.tcp-by-ip", "k8s-deny-settled", Exposure::kExposed, settled)};
  const auto late = PolicyLateBanners(m);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0],
            "NetworkPolicy is enforced late for new pods on this cluster: k8s-deny (policy 40s "
            "old) reached net.dns in a fresh pod; k8s-deny-settled held them in pods that waited "
            "5s");
  const auto not_enforced = PolicyNotEnforcedBanners(m);
  ASSERT_EQ(not_enforced.size(), 1u);
  // The late row is explained; the row that leaked in both arms is not.
  EXPECT_EQ(not_enforced[0].find("k8s-deny (policy 40s old) reached net.dns"), std::string::npos)
      << not_enforced[0];
  EXPECT_NE(not_enforced[0].find("k8s-deny (policy 40s old) reached net.tcp-by-ip"),
            std::string::npos)
      << not_enforced[0];
  EXPECT_NE(not_enforced[0].find("k8s-deny-settled (policy 41s old) reached net.tcp-by-ip"),
            std::string::npos)
      << not_enforced[0];
  EXPECT_EQ(PolicyBanners(m).size(), 2u);
  EXPECT_EQ(PolicyBanners(m)[0], late[0]);
  // Per node (--nodes): the twin is "<arm>-settled@<node>".
  Matrix nodes = TwoArms();
  nodes.arms = {Arm("k8s-open@n1", ArmRole::kControl), Arm("k8s-deny@n1", ArmRole::kCandidate),
                Arm("k8s-deny-settled@n1", ArmRole::kCandidate)};
  nodes.cells = {MakeCell("net.dns", "k8s-open@n1", Exposure::kExposed),
                 MakeCell("net.dns", "k8s-deny@n1", Exposure::kExposed, old_policy),
                 MakeCell("net.dns", "k8s-deny-settled@n1", Exposure::kContained, settled)};
  ASSERT_EQ(PolicyLateBanners(nodes).size(), 1u);
  EXPECT_NE(PolicyLateBanners(nodes)[0].find("k8s-deny-settled@n1 held them"), std::string::npos);
  EXPECT_TRUE(PolicyNotEnforcedBanners(nodes).empty());
  // Without a settled twin there is no late finding: a fresh leak alone is "not enforced".
  Matrix plain = TwoArms();
  plain.cells = {MakeCell("net.dns", "k8s-open", Exposure::kExposed),
                 MakeCell("net.dns", "k8s-deny", Exposure::kExposed, old_policy)};
  EXPECT_TRUE(PolicyLateBanners(plain).empty());
  EXPECT_EQ(PolicyNotEnforcedBanners(plain).size(), 1u);
}

// An arm that measures one address family (kubernetes.ipFamily) is named with it: the banner says
// which family leaked.
TEST(BannersTest, TheFamilyThatLeakedIsNamed) {
  Matrix m = TwoArms();
  m.arms[1].ip_family = "IPv6";
  m.arms.push_back(Arm("k8s-deny-settled", ArmRole::kCandidate));
  m.arms.back().ip_family = "IPv6";
  nlohmann::json settled = kPolicy;
  settled["pod_settle_s"] = 6;
  m.cells = {MakeCell("net.dns", "k8s-open", Exposure::kExposed),
             MakeCell("net.tcp-by-ip", "k8s-open", Exposure::kExposed),
             MakeCell("net.dns", "k8s-deny", Exposure::kExposed, kPolicy),
             MakeCell("net.dns", "k8s-deny-settled", Exposure::kContained, settled),
             MakeCell("net.tcp-by-ip", "k8s-deny", Exposure::kExposed, kPolicy),
             MakeCell("net.tcp-by-ip", "k8s-deny-settled", Exposure::kExposed, settled)};
  const auto banners = PolicyBanners(m);
  ASSERT_EQ(banners.size(), 2u);
  EXPECT_NE(banners[0].find("k8s-deny (IPv6) (policy 3s old) reached net.dns in a fresh pod; "
                            "k8s-deny-settled (IPv6) held them"),
            std::string::npos)
      << banners[0];
  EXPECT_NE(banners[1].find("k8s-deny-settled (IPv6) (policy 3s old) reached net.tcp-by-ip"),
            std::string::npos)
      << banners[1];
}

// An allow-list policy (some egress allowed as written): a leak counts only on a row whose exposed
// outcome is beyond what any policy allows as written (Row::beyond_policy, a net.policy-* row's
// outside pair), and then only for the late banner: a field ignored in the settled pod too is that
// field's finding (the row FAILs), not "not enforced".
TEST(BannersTest, AllowListPolicyLateOnlyOnRowsBeyondThePolicy) {
  Matrix m;
  m.arms = {Arm("k8s-open", ArmRole::kControl), Arm("k8s-fields", ArmRole::kCandidate),
            Arm("k8s-fields-settled", ArmRole::kCandidate)};
  m.rows = {{"net.policy-endport", "endPort", Level::kRequired, "net", true},
            {"net.policy-named-port", "named port", Level::kRequired, "net", true},
            {"net.tcp-by-ip", "tcp by ip", Level::kRequired, "net", false}};
  const nlohmann::json fresh = {
      {"network_policy", "p"}, {"policy_denies_all_egress", false}, {"policy_age_s", 12}};
  const nlohmann::json settled = {{"network_policy", "p2"},
                                  {"policy_denies_all_egress", false},
                                  {"policy_age_s", 13},
                                  {"pod_settle_s", 6}};
  for (const char* probe : {"net.policy-endport", "net.policy-named-port", "net.tcp-by-ip"}) {
    m.cells.push_back(MakeCell(probe, "k8s-open", Exposure::kExposed));
    m.cells.push_back(MakeCell(probe, "k8s-fields", Exposure::kExposed, fresh));
  }
  m.cells.push_back(MakeCell("net.policy-endport", "k8s-fields-settled", Exposure::kContained,
                             settled, Evidence::kAbsence));
  m.cells.push_back(
      MakeCell("net.policy-named-port", "k8s-fields-settled", Exposure::kExposed, settled));
  m.cells.push_back(MakeCell("net.tcp-by-ip", "k8s-fields-settled", Exposure::kContained, settled,
                             Evidence::kAbsence));
  const auto late = PolicyLateBanners(m);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0],
            "NetworkPolicy is enforced late for new pods on this cluster: k8s-fields (policy 12s "
            "old) reached net.policy-endport in a fresh pod; k8s-fields-settled held them in pods "
            "that waited 6s");
  EXPECT_TRUE(PolicyNotEnforcedBanners(m).empty());
  m.rows[0].beyond_policy = false;  // the same cells, an ordinary row: the policy allows some
  EXPECT_TRUE(PolicyBanners(m).empty());
}

// A pod the driver changed while it ran (kubernetes.liveChange) reached its target before or
// after the policy came to select it: its own row judges that (classify.live_change), never a
// banner, even under a deny-all policy that selects its labels as they ended.
TEST(BannersTest, ALiveChangedPodIsNoEvidenceAboutEnforcement) {
  Matrix m = TwoArms();
  nlohmann::json live = kPolicy;
  live["live_change"] = "added label s=1";
  m.cells = {MakeCell("net.dns", "k8s-open", Exposure::kExposed),
             MakeCell("net.dns", "k8s-deny", Exposure::kExposed, live)};
  EXPECT_TRUE(PolicyBanners(m).empty());
  m.cells[1] = MakeCell("net.dns", "k8s-deny", Exposure::kExposed, kPolicy);
  EXPECT_EQ(PolicyNotEnforcedBanners(m).size(), 1u);
}

}  // namespace
}  // namespace sandprobe::core
