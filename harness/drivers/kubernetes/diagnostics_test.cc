// The pure checks behind a policy arm's "ruled out before concluding" note.
#include "drivers/kubernetes/diagnostics.h"

#include <gtest/gtest.h>

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;

TEST(DiagnosticsTest, SelectorMatchesTable) {
  const Json labels = {{"sandprobe.io/run", "r1"}, {"sandprobe.io/arm", "deny"}, {"tier", "x"}};
  const struct {
    const char* selector;
    std::optional<bool> want;
  } cases[] = {
      {"{}", true},
      {"null", true},
      {R"({"matchLabels": {"sandprobe.io/run": "r1", "sandprobe.io/arm": "deny"}})", true},
      {R"({"matchLabels": {"sandprobe.io/run": "r2"}})", false},
      {R"({"matchLabels": {"missing": "x"}})", false},
      {R"({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]})", true},
      {R"({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]})", false},
      {R"({"matchExpressions": [{"key": "nope", "operator": "NotIn", "values": ["x"]}]})", true},
      {R"({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})", true},
      {R"({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})", false},
      {R"({"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]})",
       std::nullopt},
      {R"({"matchLabels": ["not", "a", "map"]})", std::nullopt},
      {R"({"matchExpressions": [{"key": "tier", "operator": 1}]})", std::nullopt},
      {R"({"matchExpressions": [{"key": "tier", "operator": "In", "values": "x"}]})", false},
      {R"("a string")", std::nullopt},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SelectorMatches(Json::parse(c.selector), labels), c.want) << c.selector;
  }
}

TEST(DiagnosticsTest, PolicySummaryTable) {
  const struct {
    const char* policy;
    const char* want;
  } cases[] = {
      {R"({"spec": {"policyTypes": ["Egress"], "egress": []}})",
       "policyTypes [\"Egress\"], deny all egress"},
      {R"({"spec": {"policyTypes": ["Ingress"]}})",
       "policyTypes [\"Ingress\"]: egress is not isolated by this policy"},
      {R"({"spec": {"policyTypes": ["Egress"], "egress": [{"ports": [{"port": 53, "protocol": "UDP"},
          {"port": 53}]}]}})",
       "policyTypes [\"Egress\"], 1 egress rule(s) allowing: ports 53/UDP, 53/TCP to any"},
      {R"({"spec": {"policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8",
          "except": ["10.1.0.0/16"]}}], "ports": [{"port": 8000, "endPort": 8080}]}]}})",
       "policyTypes [\"Egress\"], 1 egress rule(s) allowing: ports 8000-8080/TCP to ipBlock "
       "10.0.0.0/8 except 10.1.0.0/16"},
  };
  for (const auto& c : cases) EXPECT_EQ(PolicySummary(Json::parse(c.policy)), c.want);
  // Hostile shapes from an API server or a proxy: a sentence, never an exception.
  for (const char* odd : {R"([])", R"({"spec": []})", R"({"spec": {"policyTypes": ["Egress"],
        "egress": [1, {"ports": [7]}, {"to": ["x", {"ipBlock": 3}]}]}})",
                          R"({"spec": {"policyTypes": ["Egress"], "egress": [{"ports":
        [{"port": 53, "protocol": 6}]}]}})"}) {
    EXPECT_NO_THROW(PolicySummary(Json::parse(odd))) << odd;
  }
  EXPECT_NO_THROW(CniHints(Json::parse(R"({"items": [1, {"metadata": {"annotations": 3}},
      {"metadata": {"annotations": {"k3s.io/node-args": 5}}}]})"),
                           Json::parse(R"({"items": [{"metadata": {"name": 7}}]})")));
}

TEST(DiagnosticsTest, CniHintsFromNodesAndDaemonSets) {
  const Json k3s_off = {
      {"items",
       {{{"metadata",
          {{"name", "n1"},
           {"annotations",
            {{"flannel.alpha.coreos.com/backend-type", "vxlan"},
             {"k3s.io/node-args", R"(["server","--disable-network-policy"])"}}}}}}}}};
  const auto hints = CniHints(k3s_off, nullptr);
  ASSERT_EQ(hints.size(), 2u);
  EXPECT_NE(hints[0].find("flannel alone does not enforce"), std::string::npos) << hints[0];
  EXPECT_NE(hints[1].find("--disable-network-policy"), std::string::npos) << hints[1];
  const Json ds = {
      {"items",
       {{{"metadata", {{"name", "calico-node"}}}}, {{"metadata", {{"name", "kube-proxy"}}}}}}};
  EXPECT_EQ(CniHints(nullptr, ds), std::vector<std::string>{"calico (DaemonSet calico-node)"});
  EXPECT_TRUE(CniHints(nullptr, nullptr).empty());
}

TEST(DiagnosticsTest, LineSaysWhatWasNotChecked) {
  RuledOut r{{"a", "b"}, {"x (HTTP 403)"}};
  EXPECT_EQ(r.Line(), "ruled out before concluding: a; b. Not checked: x (HTTP 403)");
}

}  // namespace
}  // namespace sandprobe::drivers::kube
