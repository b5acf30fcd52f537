// Golden tests: every object the kubernetes driver submits is pinned in testdata/<name>.json and
// compared field by field (JSON pointer of each difference). To approve an intended change:
//   SANDPROBE_UPDATE_BASELINES=1 ./kube_test --gtest_filter='Golden*'   then review git diff.
#include "drivers/kubernetes/objects.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "config/yaml_json.h"
#include "drivers/kubernetes/section_testing.h"

namespace sandprobe::drivers::kube {
namespace {

using Json = nlohmann::json;

bool UpdateRequested() {
  const char* v = std::getenv("SANDPROBE_UPDATE_BASELINES");
  return v != nullptr && std::string_view(v) == "1";
}

void Diff(const Json& want, const Json& got, const std::string& at, std::vector<std::string>& out) {
  if (want.is_number() && got.is_number()) {
    if (want != got) out.push_back(fmt::format("{}: want {} got {}", at, want.dump(), got.dump()));
    return;
  }
  if (want.type() != got.type()) {
    out.push_back(fmt::format("{}: want {} got {}", at.empty() ? "/" : at,
                              want.dump().substr(0, 120), got.dump().substr(0, 120)));
    return;
  }
  if (want.is_object()) {
    for (auto& [k, v] : want.items()) {
      const std::string p = at + "/" + k;
      if (!got.contains(k)) {
        out.push_back(p + ": missing");
      } else {
        Diff(v, got[k], p, out);
      }
    }
    for (auto& [k, v] : got.items()) {
      if (!want.contains(k))
        out.push_back(at + "/" + k + ": unexpected " + v.dump().substr(0, 120));
    }
  } else if (want.is_array()) {
    if (want.size() != got.size()) {
      out.push_back(fmt::format("{}: {} elements, want {}", at, got.size(), want.size()));
    }
    for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
      Diff(want[i], got[i], fmt::format("{}/{}", at, i), out);
    }
  } else if (want != got) {
    out.push_back(fmt::format("{}: want {} got {}", at, want.dump().substr(0, 200),
                              got.dump().substr(0, 200)));
  }
}

void ExpectGolden(const std::string& name, const Json& got) {
  const std::string path = std::string(SANDPROBE_KUBE_TESTDATA) + "/" + name + ".json";
  if (UpdateRequested()) {
    std::ofstream(path) << got.dump(2) << "\n";
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing (create it with SANDPROBE_UPDATE_BASELINES=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  const Json want = Json::parse(ss.str());
  std::vector<std::string> diffs;
  Diff(want, got, "", diffs);
  EXPECT_TRUE(diffs.empty()) << name << " differs from " << path << ":\n  "
                             << fmt::format("{}", fmt::join(diffs, "\n  "))
                             << "\nIf intended: SANDPROBE_UPDATE_BASELINES=1 ./kube_test";
}

constexpr char kFile[] = "/repo/manifests/kubernetes/x.yaml";

core::Manifest Manifest(const std::string& yaml_section_json) {
  return KubeManifestForTest("k8s-deny-egress", kFile, Json::parse(yaml_section_json));
}

constexpr char kImage[] =
    "registry.example/sandprobe-probe@sha256:"
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
constexpr char kRun[] = "sp-20250101T120000Z-a1b2c3";

JobRequest Request(const std::string& probe = "net.dns") {
  return JobRequest{
      kRun, "k8s-deny-egress", "i007ab12", probe, "print('probe')\nemit(\"result\")\n", 10, ""};
}

KubeSettings Hardened() {
  core::Manifest m = Manifest(fmt::format(
      R"({{"image": "{}", "namespace": "sandprobe", "networkPolicy": "deny-all-egress",
          "minPolicyAge": "60s"}})",
      kImage));
  m.limits.timeout_s = 10;
  m.limits.memory_bytes = 256ull << 20;
  m.limits.tmp_bytes = 32ull << 20;
  auto s = SettingsOf(m);
  EXPECT_TRUE(s.has_value()) << s.error();
  return *s;
}

TEST(ObjectsTest, TemplateWeakeningsTable) {
  KubeSettings s;
  s.image = "img@sha256:0";
  const JobRequest r{"run", "arm", "inv", "probe.x", "print(1)", 10, ""};
  EXPECT_TRUE(TemplateWeakenings(BuildJob(s, r)).empty()) << "the defaults weaken nothing";
  const struct {
    const char* patch;
    const char* want;
  } cases[] = {
      {R"({"spec":{"template":{"spec":{"hostNetwork":true}}}})", "hostNetwork"},
      {R"({"spec":{"template":{"spec":{"automountServiceAccountToken":true}}}})",
       "service-account"},
      {R"({"spec":{"template":{"spec":{"securityContext":{"runAsUser":0}}}}})", "uid 0"},
      {R"({"spec":{"template":{"spec":{"containers":[{"name":"probe","securityContext":{"privileged":true}}]}}}})",
       "privileged"},
      {R"({"spec":{"template":{"spec":{"containers":[{"name":"probe","securityContext":{"readOnlyRootFilesystem":false}}]}}}})",
       "writable root"},
      {R"({"spec":{"template":{"spec":{"containers":[{"name":"probe"},{"name":"evil","image":"x"}]}}}})",
       "adds 1 container"},
  };
  for (const auto& c : cases) {
    KubeSettings t = s;
    t.job_template = nlohmann::json::parse(c.patch);
    const auto w = TemplateWeakenings(BuildJob(t, r));
    std::string all;
    for (const auto& line : w) all += line + "\n";
    EXPECT_NE(all.find(c.want), std::string::npos) << c.patch << "\n" << all;
  }
}

// pid 1 in front of the probe: stderr_tail.py keeps stderr out of pods/log and its last 4 KiB for
// the termination message (trap 44), after the podSettle sleep. What the script does is tested
// by kube.stderr_tail_script (test_stderr_tail.py); here, that the Job runs it, as written.
TEST(ObjectsTest, ProbeStderrGoesToTheTerminationMessageNotToPodsLog) {
  const Json c = BuildJob(Hardened(), Request())["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["terminationMessagePath"], kTerminationMessagePath);
  EXPECT_EQ(c["terminationMessagePolicy"], "File");  // never FallbackToLogsOnError: stdout
  const Json& cmd = c["command"];
  ASSERT_EQ(cmd.size(), kProbeCommandAt + 10);
  EXPECT_EQ(cmd[0], "python3");
  EXPECT_EQ(cmd[1], "-I");
  EXPECT_EQ(cmd[2], "-S");
  EXPECT_EQ(cmd[3], "-c");
  std::ifstream in(std::string(SANDPROBE_KUBE_SOURCE_DIR) + "/stderr_tail.py");
  const std::string script((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(script.empty());
  EXPECT_EQ(cmd[4], script);
  EXPECT_EQ(cmd[5], kTerminationMessagePath);
  EXPECT_EQ(cmd[6], "0");  // no podSettle
  EXPECT_EQ(cmd[kProbeCommandAt], "timeout");
  // The probe starts as in every driver: no environment, site or user path before it.
  EXPECT_EQ(cmd[kProbeCommandAt + 4], "python3");
  EXPECT_EQ(cmd[kProbeCommandAt + 5], "-I");
  EXPECT_EQ(cmd[kProbeCommandAt + 6], "-S");
  EXPECT_EQ(cmd[kProbeCommandAt + 9], Request().script);
}

TEST(ObjectsTest, RunFolderAnnotationOnTheObjectAndAJobsPods) {
  Json job = BuildJob(Hardened(), Request());
  AnnotateRunFolder(job, "/home/u/.cache/sandprobe/canary/sp-1");
  EXPECT_EQ(job["metadata"]["annotations"][kRunFolderAnnotation],
            "/home/u/.cache/sandprobe/canary/sp-1");
  EXPECT_EQ(job["spec"]["template"]["metadata"]["annotations"][kRunFolderAnnotation],
            "/home/u/.cache/sandprobe/canary/sp-1");
  EXPECT_EQ(job["metadata"]["annotations"]["sandprobe.io/probe"], Request().probe);  // kept
  Json policy = BuildDenyAllEgressPolicy(kRun, "k8s-deny-egress");
  AnnotateRunFolder(policy, "/c/sp-1");
  EXPECT_EQ(policy["metadata"]["annotations"][kRunFolderAnnotation], "/c/sp-1");
  EXPECT_FALSE(policy["spec"].contains("template"));
  const Json before = BuildJob(Hardened(), Request());
  Json unchanged = before;
  AnnotateRunFolder(unchanged, "");
  EXPECT_EQ(unchanged, before);
}

TEST(ObjectsTest, SettledPodWaitsThenExecsTheProbeCommand) {
  KubeSettings s = Hardened();
  const Json plain = BuildJob(s, Request())["spec"]["template"]["spec"]["containers"][0]["command"];
  s.pod_settle_s = 5;
  const Json job = BuildJob(s, Request());
  const Json cmd = job["spec"]["template"]["spec"]["containers"][0]["command"];
  ASSERT_EQ(cmd.size(), plain.size());
  EXPECT_EQ(cmd[6], "5");  // stderr_tail.py's SETTLE_S
  for (size_t i = 0; i < plain.size(); ++i) {
    if (i != 6) {
      EXPECT_EQ(cmd[i], plain[i]) << i;
    }
  }
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"].get<int64_t>(),
            BuildJob(Hardened(), Request())["spec"]["activeDeadlineSeconds"].get<int64_t>() + 5);
}

TEST(GoldenObjects, HardenedJob) { ExpectGolden("job-hardened", BuildJob(Hardened(), Request())); }

TEST(GoldenObjects, OpenControlJob) {
  auto s = SettingsOf(Manifest(fmt::format(R"({{"image": "{}"}})", kImage)));
  ASSERT_TRUE(s.has_value()) << s.error();
  JobRequest r = Request();
  r.arm = "k8s-open";
  r.timeout_s = ContainerTimeout(s->limits, 15);
  EXPECT_EQ(r.timeout_s, 45);  // no claimed timeout: the harness deadline + 30 s
  ExpectGolden("job-open", BuildJob(*s, r));
}

// The gVisor arm's template: runtimeClassName, a container patch (cpu, an env var) and attempts to
// override what must not change (command, args, name, image, labels).
KubeSettings Templated() {
  core::Manifest m = Manifest(fmt::format(R"({{"image": "{}", "node": "node-a", "jobTemplate": {{
      "metadata": {{"name": "hijack", "labels": {{"sandprobe.io/run": "other", "team": "sec"}},
                    "annotations": {{"owner": "ops"}}}},
      "spec": {{"backoffLimit": 3, "ttlSecondsAfterFinished": 60, "template": {{
        "metadata": {{"labels": {{"sandprobe.io/arm": "other", "tier": "probe"}}}},
        "spec": {{"runtimeClassName": "gvisor", "priorityClassName": "low",
          "containers": [{{"name": "probe", "image": "evil:latest", "command": ["sh"],
                           "args": ["-c", "id"],
                           "resources": {{"limits": {{"cpu": "500m"}}}},
                           "env": [{{"name": "MODE", "value": "strict"}}]}}]}}}}}}}}}})",
                                          kImage));
  m.limits.memory_bytes = 128ull << 20;
  auto s = SettingsOf(m);
  EXPECT_TRUE(s.has_value()) << s.error();
  return *s;
}

// The driver's SANDPROBE_NODE_IP replaces a template's variable of that name; a malformed entry
// (a name that is not a string) is left for the API server to refuse, never a crash here.
TEST(BuildJob, NodeIpEnvReplacesTheTemplatesAndSurvivesOddEntries) {
  auto s = SettingsOf(Manifest(fmt::format(R"({{"image": "{}", "jobTemplate": {{"spec": {{
      "template": {{"spec": {{"containers": [{{"name": "probe", "env": [
        {{"name": "SANDPROBE_NODE_IP", "value": "6.6.6.6"}}, {{"name": 5}}]}}]}}}}}}}}}})",
                                           kImage)));
  ASSERT_TRUE(s.has_value()) << s.error();
  const Json env = BuildJob(*s, Request())["spec"]["template"]["spec"]["containers"][0]["env"];
  ASSERT_EQ(env.size(), 2u) << env.dump();
  EXPECT_EQ(env[0], Json({{"name", 5}}));
  EXPECT_EQ(env[1]["valueFrom"]["fieldRef"]["fieldPath"], "status.hostIP") << env.dump();
}

// Containers whose name is not a string are left as they are (never a crash): the API server
// refuses them.
TEST(BuildJob, AContainerWithANonStringNameIsNoCrash) {
  auto s = SettingsOf(Manifest(fmt::format(R"({{"image": "{}", "jobTemplate": {{"spec": {{
      "template": {{"spec": {{"containers": [{{"name": 5}}, {{"name": 7}}]}}}}}}}}}})",
                                           kImage)));
  ASSERT_TRUE(s.has_value()) << s.error();
  const Json cs = BuildJob(*s, Request())["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(cs.size(), 3u) << cs.dump();
  EXPECT_EQ(cs[0]["name"], "probe");
  EXPECT_EQ(cs[1]["name"], 5);
}

TEST(GoldenObjects, TemplatedJob) {
  const Json job = BuildJob(Templated(), Request());
  ExpectGolden("job-templated", job);
  // What always wins, checked here as well as in the file:
  const Json& c = job["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["name"], "probe");
  EXPECT_EQ(c["image"], kImage);
  EXPECT_EQ(c["command"][kProbeCommandAt], "timeout");
  EXPECT_EQ(c["command"][kProbeCommandAt + 9], "print('probe')\nemit(\"result\")\n");
  EXPECT_FALSE(c.contains("args"));
  EXPECT_EQ(c["resources"]["limits"]["cpu"], "500m");
  // The template's variable stays; the node address comes from the downward API, last.
  ASSERT_EQ(c["env"].size(), 2u) << c["env"].dump();
  EXPECT_EQ(c["env"][0]["name"], "MODE");
  EXPECT_EQ(c["env"][1]["name"], kNodeIpEnv);
  EXPECT_EQ(c["env"][1]["valueFrom"]["fieldRef"]["fieldPath"], "status.hostIP");
  EXPECT_EQ(c["resources"]["limits"]["memory"], "128Mi");
  EXPECT_EQ(job["metadata"]["name"], "sp-20250101t120000z-a1b2c3-i007ab12");
  EXPECT_EQ(job["metadata"]["labels"]["sandprobe.io/run"], kRun);
  EXPECT_EQ(job["metadata"]["labels"]["team"], "sec");
  EXPECT_EQ(job["spec"]["template"]["metadata"]["labels"]["sandprobe.io/arm"], "k8s-deny-egress");
  EXPECT_EQ(job["spec"]["template"]["spec"]["runtimeClassName"], "gvisor");
  EXPECT_EQ(job["spec"]["template"]["spec"]["nodeName"], "node-a");
  EXPECT_EQ(job["spec"]["backoffLimit"], 3);  // the template may change it (documented)
}

TEST(GoldenObjects, AdmissionPodHasNoRuntimeClass) {
  const Json pod = BuildAdmissionPod(Templated(), Request("platform.runtime-class"));
  ExpectGolden("pod-admission", pod);
  EXPECT_FALSE(pod["spec"].contains("runtimeClassName"));
  EXPECT_EQ(pod["kind"], "Pod");
}

TEST(GoldenObjects, DenyAllEgressPolicy) {
  const Json p = BuildDenyAllEgressPolicy(kRun, "k8s-deny-egress");
  ExpectGolden("networkpolicy-deny-all-egress", p);
  // It selects exactly the arm's pods.
  const Json job_labels = BuildJob(Hardened(), Request())["spec"]["template"]["metadata"]["labels"];
  for (auto& [k, v] : p["spec"]["podSelector"]["matchLabels"].items()) EXPECT_EQ(job_labels[k], v);
}

TEST(GoldenObjects, UserPolicy) {
  auto p = PolicyFromYaml(R"(apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-dns, namespace: prod, uid: x}
spec:
  podSelector: {matchLabels: {"sandprobe.io/arm": k8s-deny-egress}}
  policyTypes: [Egress]
  egress:
  - to: [{namespaceSelector: {}}]
    ports: [{protocol: UDP, port: 53}, {protocol: TCP, port: "53"}]
)",
                          "/m/allow-dns.yaml", kRun, "k8s-deny-egress");
  ASSERT_TRUE(p.has_value()) << p.error();
  ExpectGolden("networkpolicy-user", *p);
  EXPECT_FALSE(PolicyFromYaml("kind: Pod\nspec: {}\n", "x.yaml", kRun, "a").has_value());
  EXPECT_FALSE(PolicyFromYaml("a: [\n", "x.yaml", kRun, "a").has_value());
  // Odd shapes are errors that name the field, never a crash (json type_error).
  for (const char* odd :
       {"kind: 5\nspec: {}\n", "kind: NetworkPolicy\nmetadata: {name: 5}\nspec: {}\n",
        "kind: NetworkPolicy\nmetadata: {labels: 5}\nspec: {}\n",
        "kind: NetworkPolicy\nmetadata: {annotations: [a]}\nspec: {}\n"}) {
    EXPECT_FALSE(PolicyFromYaml(odd, "x.yaml", kRun, "a").has_value()) << odd;
  }
}

TEST(Names, Dns1123AndBounded) {
  EXPECT_EQ(JobName("sp-20250101T120000Z-a1b2c3", "i001ab"), "sp-20250101t120000z-a1b2c3-i001ab");
  const std::string long_run(80, 'R');
  const std::string a = JobName(long_run, "i001"), b = JobName(long_run, "i002");
  EXPECT_LE(a.size(), 63u);
  EXPECT_NE(a, b);  // the hash suffix keeps truncated names apart
  EXPECT_EQ(a.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos);
  EXPECT_EQ(PolicyName(kRun, "K8s Deny_Egress"),
            "sandprobe-20250101t120000z-a1b2c3-k8s-deny-egress");
  EXPECT_EQ(LabelValue("-arm name/x."), "arm-name-x");
  EXPECT_LE(LabelValue(std::string(100, 'a')).size(), 63u);
  EXPECT_EQ(RunSelector(kRun), std::string("sandprobe.io/run=") + kRun);
}

TEST(Quantities, ExactUnits) {
  EXPECT_EQ(Quantity(256ull << 20), "256Mi");
  EXPECT_EQ(Quantity(1ull << 30), "1Gi");
  EXPECT_EQ(Quantity(1536ull << 10), "1536Ki");
  EXPECT_EQ(Quantity(1000), "1000");
}

TEST(Settings, Errors) {
  struct Case {
    std::string json, want;
  };
  const std::vector<Case> cases = {
      {R"({})", "kubernetes.image: required"},
      {R"({"image": "x", "imagee": 1})", "kubernetes.imagee: unknown field"},
      {R"({"image": "x", "minPolicyAge": "soon", "networkPolicy": "deny-all-egress"})",
       "kubernetes.minPolicyAge:"},
      {R"({"image": "x", "minPolicyAge": "60s"})", "minPolicyAge: needs networkPolicy"},
      {R"({"image": "x", "jobTemplate": []})", "kubernetes.jobTemplate: expected a mapping"},
      {R"({"image": "x", "logLimit": "lots"})", "kubernetes.logLimit"},
      {R"({"image": 3})", "kubernetes.image: expected a string"},
  };
  for (const Case& c : cases) {
    auto s = ReadSectionForTest(Json::parse(c.json), kFile);
    ASSERT_FALSE(s.has_value()) << c.json;
    EXPECT_NE(s.error().find(c.want), std::string::npos) << s.error();
    EXPECT_TRUE(s.error().starts_with("/repo/manifests/kubernetes/x.yaml:1:")) << s.error();
  }
  auto rel =
      ReadSectionForTest(Json::parse(R"({"image": "x", "networkPolicy": "p/allow.yaml"})"), kFile);
  ASSERT_TRUE(rel.has_value());
  EXPECT_EQ(rel->network_policy, "/repo/manifests/kubernetes/p/allow.yaml");
}

TEST(Yaml, RoundTripKeepsTypesAndScripts) {
  const Json v = {{"s", "true"},
                  {"n", 10},
                  {"f", 1.5},
                  {"b", false},
                  {"z", nullptr},
                  {"num", "10"},
                  {"e", ""},
                  {"colon", "a: b"},
                  {"script", "import os\n  x = '#'\nprint(\"a\")\n"},
                  {"noeol", "two\nlines"},  // no final newline: exact, double-quoted
                  {"trail", "line\n"},
                  {"arr", {1, "2", Json::object()}}};
  auto back = config::YamlToJson(JsonToYaml(v), "rendered.yaml");
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, v) << JsonToYaml(v);
  EXPECT_NE(JsonToYaml(v).find("script: |"), std::string::npos) << JsonToYaml(v);
}

}  // namespace
}  // namespace sandprobe::drivers::kube
