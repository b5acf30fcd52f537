// The in-cluster canary's pure parts: hit lines read back from pods/log, and the objects
// deployed (names, ports, hardening), plus the embedded script being the file in the tree.
#include "drivers/kubernetes/cluster_canary.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "drivers/kubernetes/section_testing.h"

namespace sandprobe::drivers::kube {
namespace {

TEST(ClusterCanaryTest, ParseCanaryHitsTable) {
  const std::string log =
      "SANDPROBE-CANARY-READY\n"
      R"(SANDPROBE-HIT {"kind":"tcp","invocation":"i001ab","peer":"10.42.0.7:4242","detail":"SANDPROBE n i001ab","unix_ms":1})"
      "\n"
      R"(SANDPROBE-HIT {"kind":"dns","invocation":"i002cd","peer":"10.42.0.8:53","detail":"x","unix_ms":2})"
      "\n"
      R"(SANDPROBE-HIT {"kind":"http","invocation":"","peer":"10.42.0.9:1","detail":"GET /","unix_ms":3})"
      "\n"
      "SANDPROBE-HIT not json\n"
      R"(SANDPROBE-HIT {"kind":"udp","invocation":["i001ab"]})"
      "\n"
      R"(  SANDPROBE-HIT {"kind":"tcp","invocation":"i001ab"})"  // not at line start
      "\n"
      R"(SANDPROBE-HIT {"kind":"http","invocation":"i001ab","peer":"1.2.3.4:5","detail":"GET /\u001b]0;owned\u0007 )"
      R"(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})"
      "\n"
      R"(SANDPROBE-HIT {"kind":"tcp","invocation":"i001ab","peer":"10.42.0.7:4243","detail":"last line, no newline","unix_ms":"soon"})";
  const auto hits = ParseCanaryHits(log, "i001ab");
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].kind, "tcp");
  EXPECT_EQ(hits[0].peer, "10.42.0.7:4242");
  EXPECT_EQ(hits[0].unix_ms, 1);  // the canary's time, for classify.live_change
  EXPECT_EQ(hits[1].unix_ms, 0);  // none given
  EXPECT_EQ(hits[2].unix_ms, 0);  // not a number: none
  EXPECT_EQ(hits[1].kind, "http");
  EXPECT_EQ(hits[1].detail.size(), 200u);                     // bounded
  EXPECT_EQ(hits[1].detail.find('\x1b'), std::string::npos);  // printable only
  EXPECT_EQ(hits[1].detail.substr(0, 8), "GET /?]0");
  EXPECT_EQ(hits[2].detail, "last line, no newline");
  EXPECT_TRUE(ParseCanaryHits(log, "").empty());  // the foreign hit never matches an invocation
  EXPECT_EQ(ParseCanaryHits(log, "i002cd").size(), 1u);
}

TEST(ClusterCanaryTest, ObjectsAreHardenedAndAgree) {
  KubeSettings s;
  s.image = "registry.example/probe@sha256:abc";
  s.namespace_name = "sandprobe";
  const std::string run = "sp-20261130T103553Z-a1b2c3";
  const auto pod = BuildCanaryPod(s, run, "n0nce", "print(1)", 3600);
  const auto svc = BuildCanaryService(run);
  EXPECT_EQ(CanaryName(run), "spc-20261130t103553z-a1b2c3");
  EXPECT_EQ(pod["metadata"]["name"], CanaryName(run));
  EXPECT_EQ(svc["metadata"]["name"], CanaryName(run));
  EXPECT_EQ(pod["metadata"]["namespace"], "sandprobe");
  // The Service selects exactly the canary Pod's labels (and no arm's policy selects it: no
  // sandprobe.io/arm label).
  for (const auto& [k, v] : svc["spec"]["selector"].items()) {
    EXPECT_EQ(pod["metadata"]["labels"][k], v) << k;
  }
  EXPECT_FALSE(pod["metadata"]["labels"].contains(kArmLabel));
  const auto& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["image"], s.image);
  EXPECT_EQ(c["command"][3], "print(1)");
  EXPECT_EQ(c["command"][4], "n0nce");
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"][0], "ALL");
  EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], false);
  EXPECT_EQ(pod["spec"]["securityContext"]["runAsUser"], 65534);
  EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"], 3660);
  // Every Service port is served by the container on the same port and protocol.
  for (const auto& p : svc["spec"]["ports"]) {
    EXPECT_EQ(p["port"], p["targetPort"]);
    bool served = false;
    for (const auto& cp : c["ports"]) {
      served = served || (cp["containerPort"] == p["port"] && cp["protocol"] == p["protocol"]);
    }
    EXPECT_TRUE(served) << p.dump();
  }
}

TEST(ClusterCanaryTest, CanaryTemplatePatchesThePodButNotItsIdentity) {
  KubeSettings s;
  s.image = "probe:1";
  s.canary_template = nlohmann::json::parse(R"({"metadata": {"name": "mine",
      "labels": {"team": "a", "sandprobe.io/role": "probe"}},
      "spec": {"runtimeClassName": "runc", "containers": [{"name": "x", "image": "evil"}],
               "tolerations": [{"operator": "Exists"}]}})");
  const auto pod = BuildCanaryPod(s, "sp-r", "n", "print(1)", 60);
  EXPECT_EQ(pod["spec"]["runtimeClassName"], "runc");
  EXPECT_EQ(pod["spec"]["tolerations"][0]["operator"], "Exists");
  EXPECT_EQ(pod["metadata"]["name"], CanaryName("sp-r"));
  EXPECT_EQ(pod["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(pod["metadata"]["labels"][kRoleLabel], "canary");
  ASSERT_EQ(pod["spec"]["containers"].size(), 1u);
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "probe:1");
  EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], false);
}

TEST(ClusterCanaryTest, CanaryTemplateOfTheWrongShape) {
  auto s = ReadSectionForTest(
      nlohmann::json::parse(R"({"image": "x", "canaryTemplate": {"spec": 1}})"), "m.yaml");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("kubernetes.canaryTemplate.spec: expected a mapping"), std::string::npos)
      << s.error();
  KubeSettings direct;  // built without the reader: still never throws, keeps its identity
  direct.image = "x";
  direct.canary_template = nlohmann::json::parse(R"({"metadata": null, "spec": null})");
  const auto pod = BuildCanaryPod(direct, "sp-r", "n", "s", 60);
  EXPECT_EQ(pod["metadata"]["name"], CanaryName("sp-r"));
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "x");
}

TEST(ClusterCanaryTest, EmbeddedScriptIsTheFileInTheTree) {
  std::ifstream in(std::string(SANDPROBE_KUBE_SOURCE_DIR) + "/cluster_canary.py");
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  EXPECT_EQ(ClusterCanaryScript(), text.str());
}

}  // namespace
}  // namespace sandprobe::drivers::kube
