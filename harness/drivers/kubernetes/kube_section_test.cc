// The `kubernetes:` section reader (kube_section.h): a table of sections with one mistake each,
// every one reported once with file, line, column, field and, where a known name is near, a
// suggestion; a section with several, each reported; the notes `sandprobe validate` prints; the
// name and selector rules (names.h).
#include "drivers/kubernetes/kube_section.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "config/manifest_sections.h"
#include "config/yaml_util.h"
#include "drivers/kubernetes/names.h"

namespace sandprobe::drivers::kube {
namespace {

// One line per row, numbered as a file: the section starts at line 3.
const std::vector<std::string> kBase = {
    "name: k8s-deny",                                      // 1
    "driver: kubernetes",                                  // 2
    "kubernetes:",                                         // 3
    "  namespace: sandprobe",                              // 4
    "  image: registry.example/probe@sha256:0123",         // 5
    "  networkPolicy: deny-all-egress",                    // 6
    "  minPolicyAge: 5s",                                  // 7
    "  agedRerun: 60s",                                    // 8
    "  settledRerun: 5s",                                  // 9
    "  podStartTimeout: 2m",                               // 10
    "  logLimit: 1Mi",                                     // 11
    "  jobTemplate:",                                      // 12
    "    spec:",                                           // 13
    "      template:",                                     // 14
    "        spec:",                                       // 15
    "          runtimeClassName: gvisor",                  // 16
    "          restartPolicy: Never",                      // 17
    "          containers:",                               // 18
    "            - name: probe",                           // 19
    "              securityContext: {runAsUser: 1000}",    // 20
    "  canaryTemplate: {spec: {runtimeClassName: runc}}",  // 21
};

std::string Text(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

config::Loaded<core::Manifest> Parse(const std::string& text) {
  const std::vector<config::DriverSection> sections = {
      {"kubernetes",
       [](const std::string& file, const YAML::Node& root,
          std::any& out) -> std::expected<void, config::ConfigError> {
         auto s = ReadKubernetesSection(file, root);
         if (!s) return std::unexpected(s.error());
         out = std::move(*s);
         return {};
       }}};
  return config::ParseManifest(text, "m.yaml", sections);
}

struct Case {
  const char* name;
  int line;                  // the base line replaced (1-based); 0 = none
  const char* replacement;   // nullptr = the line is removed
  int want_line, want_col;   // where the error points
  const char* want_field;    // ConfigError::field
  const char* want_message;  // a part of the message (the suggestion, where there is one)
};

const Case kCases[] = {
    {"unknown key", 4, "  namespce: sandprobe", 4, 3, "kubernetes.namespce",
     "unknown field; did you mean namespace?"},
    {"key in the wrong case", 6, "  NetworkPolicy: deny-all-egress", 6, 3,
     "kubernetes.NetworkPolicy", "did you mean networkPolicy?"},
    {"namespace with capitals", 4, "  namespace: Sandprobe_1", 4, 14, "kubernetes.namespace",
     "DNS-1123 label is 1-63 characters of a-z, 0-9 and '-'"},
    {"namespace too long", 4,
     "  namespace: abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd", 4, 14,
     "kubernetes.namespace", "DNS-1123 label"},
    {"namespace ending in a dash", 4, "  namespace: sandprobe-", 4, 14, "kubernetes.namespace",
     "starting and ending with a letter or digit"},
    {"namespace a number", 4, "  namespace: 123", 4, 14, "kubernetes.namespace",
     "expected a string (quote it: \"123\")"},
    {"image a list", 5, "  image: [a, b]", 5, 10, "kubernetes.image", "expected a string"},
    {"image missing", 5, nullptr, 4, 3, "kubernetes.image", "required"},
    {"agedRerun not a duration", 8, "  agedRerun: soon", 8, 14, "kubernetes.agedRerun",
     "'soon' is not a duration"},
    {"agedRerun too long", 8, "  agedRerun: 2h", 8, 14, "kubernetes.agedRerun",
     "must be more than 0s and at most 1h"},
    {"agedRerun no older than minPolicyAge", 8, "  agedRerun: 5s", 8, 14, "kubernetes.agedRerun",
     "must be longer than minPolicyAge (5s)"},
    {"minPolicyAge negative", 7, "  minPolicyAge: -5s", 7, 17, "kubernetes.minPolicyAge",
     "'-5s' is not a duration"},
    {"minPolicyAge too long", 7, "  minPolicyAge: 90m", 7, 17, "kubernetes.minPolicyAge",
     "at least 0s and at most 1h"},
    {"minPolicyAge without a policy", 6, nullptr, 6, 17, "kubernetes.minPolicyAge",
     "needs networkPolicy"},
    {"settledRerun zero", 9, "  settledRerun: 0s", 9, 17, "kubernetes.settledRerun",
     "must be more than 0s"},
    {"podStartTimeout zero", 10, "  podStartTimeout: 0s", 10, 20, "kubernetes.podStartTimeout",
     "must be at least 1s and at most 1h"},
    {"podSettle unit", 10, "  podSettle: 5 minutes", 10, 14, "kubernetes.podSettle",
     "unknown unit"},
    {"apiTimeout zero", 10, "  apiTimeout: 0", 10, 15, "kubernetes.apiTimeout",
     "must be more than 0s and at most 5m"},
    {"logLimit past what is read", 11, "  logLimit: 16Mi", 11, 13, "kubernetes.logLimit",
     "from 1 to 8Mi"},
    {"node with capitals", 11, "  node: Node_1", 11, 9, "kubernetes.node", "DNS-1123 subdomain"},
    {"canaryTemplate a list", 21, "  canaryTemplate: [spec]", 21, 19, "kubernetes.canaryTemplate",
     "expected a mapping (a Pod)"},
    {"jobTemplate typo containerz", 18, "          containerz:", 18, 11,
     "kubernetes.jobTemplate.spec.template.spec.containerz",
     "unknown field; did you mean containers?"},
    {"jobTemplate typo securityContex", 20, "              securityContex: {runAsUser: 1000}", 20,
     15, "kubernetes.jobTemplate.spec.template.spec.containers[0].securityContex",
     "did you mean securityContext?"},
    {"jobTemplate field in the wrong case", 17, "          RestartPolicy: Never", 17, 11,
     "kubernetes.jobTemplate.spec.template.spec.RestartPolicy", "did you mean restartPolicy?"},
    {"jobTemplate typo in JobSpec", 14, "      templates:", 14, 7,
     "kubernetes.jobTemplate.spec.templates", "did you mean template?"},
    {"jobTemplate containers a mapping", 19, "              name: probe", 19, 15,
     "kubernetes.jobTemplate.spec.template.spec.containers", "expected a list of Container"},
    {"canaryTemplate spec a string", 21, "  canaryTemplate: {spec: runc}", 21, 26,
     "kubernetes.canaryTemplate.spec", "mapping"},
    {"liveChange both kinds", 11, "  liveChange: {addLabels: {a: b}, removeLabels: [a]}", 11, 15,
     "kubernetes.liveChange", "give exactly one of addLabels and removeLabels"},
    {"liveChange the driver's label", 11, "  liveChange: {addLabels: {sandprobe.io/arm: x}}", 11,
     28, "kubernetes.liveChange.addLabels.sandprobe.io/arm", "the driver's own label"},
    {"liveChange value not a string", 11, "  liveChange: {addLabels: {sandboxed: true}}", 11, 39,
     "kubernetes.liveChange.addLabels.sandboxed", "quote it"},
    {"liveChange after too long", 11, "  liveChange: {after: 2m, removeLabels: [a]}", 11, 23,
     "kubernetes.liveChange.after", "at least 0s and at most 60s"},
    {"liveChange settle next to nothing", 11, "  liveChange: {settle: 1ms, removeLabels: [a]}", 11,
     24, "kubernetes.liveChange.settle", "at least 0.1s"},
    {"liveChange the Job's label", 11, "  liveChange: {removeLabels: [job-name]}", 11, 31,
     "kubernetes.liveChange.removeLabels[0]", "Kubernetes' own label"},
    {"liveChange a batch label", 11,
     "  liveChange: {addLabels: {batch.kubernetes.io/controller-uid: x}}", 11, 28,
     "kubernetes.liveChange.addLabels.batch.kubernetes.io/controller-uid", "Kubernetes' own label"},
    {"liveChange the canary's role", 11, "  liveChange: {addLabels: {sandprobe.io/role: canary}}",
     11, 28, "kubernetes.liveChange.addLabels.sandprobe.io/role", "the driver's own label"},
    {"liveChange a key twice", 11, "  liveChange: {removeLabels: [a, a]}", 11, 34,
     "kubernetes.liveChange.removeLabels[1]", "listed twice"},
    {"liveChange a null key", 11, "  liveChange: {removeLabels: [~]}", 11, 31,
     "kubernetes.liveChange.removeLabels[0]", "expected a label key as a string"},
    {"liveChange a kubernetes.io label", 11, "  liveChange: {removeLabels: [kubernetes.io/x]}", 11,
     31, "kubernetes.liveChange.removeLabels[0]", "Kubernetes' own label"},
    {"liveChange typo", 11, "  liveChange: {afterr: 3s, removeLabels: [a]}", 11, 16,
     "kubernetes.liveChange.afterr", "did you mean after?"},
    {"liveChange bad key", 11, "  liveChange: {removeLabels: [\"-x\"]}", 11, 31,
     "kubernetes.liveChange.removeLabels[0]", "not a label key"},
    {"ipFamily lower case", 11, "  ipFamily: ipv6", 11, 13, "kubernetes.ipFamily",
     "expected IPv4 or IPv6 (as Service spec.ipFamilies spells them), not 'ipv6'; did you mean "
     "IPv6?"},
    {"ipFamily empty", 11, "  ipFamily: \"\"", 11, 13, "kubernetes.ipFamily", "not ''"},
    {"ipFamily dual", 11, "  ipFamily: DualStack", 11, 13, "kubernetes.ipFamily",
     "one family per arm: give two arms, one of each"},
    {"ipFamily both", 11, "  ipFamily: [IPv4, IPv6]", 11, 13, "kubernetes.ipFamily",
     "expected a string"},
    {"canaryTemplate typo", 21, "  canaryTemplate: {spec: {runtimeClasName: runc}}", 21, 27,
     "kubernetes.canaryTemplate.spec.runtimeClasName", "did you mean runtimeClassName?"},
};

class KubeSection : public ::testing::TestWithParam<Case> {};

TEST(KubeSectionBase, TheBaseSectionIsValid) {
  auto m = Parse(Text(kBase));
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  auto s = SettingsOf(*m);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->namespace_name, "sandprobe");
}

TEST_P(KubeSection, OneMistakeOneErrorAtItsLineAndColumn) {
  const Case& c = GetParam();
  std::vector<std::string> lines = kBase;
  if (c.replacement == nullptr) {
    lines.erase(lines.begin() + c.line - 1);
  } else {
    lines[c.line - 1] = c.replacement;
  }
  auto m = Parse(Text(lines));
  ASSERT_FALSE(m.has_value()) << c.name << ": accepted";
  const config::ConfigError& e = m.error();
  EXPECT_EQ(e.file, "m.yaml");
  EXPECT_EQ(e.line, c.want_line) << e.ToString();
  EXPECT_EQ(e.column, c.want_col) << e.ToString();
  EXPECT_EQ(e.field, c.want_field) << e.ToString();
  EXPECT_NE(e.message.find(c.want_message), std::string::npos) << e.ToString();
  // One error, and its text says where: "m.yaml:L:C: kubernetes.<field>: message".
  EXPECT_TRUE(e.ToString().starts_with("m.yaml:" + std::to_string(c.want_line) + ":" +
                                       std::to_string(c.want_col) + ": " + c.want_field + ": "))
      << e.ToString();
}

INSTANTIATE_TEST_SUITE_P(Malformed, KubeSection, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// Several mistakes: each key is checked on its own, so all are reported, in the order found.
TEST(KubeSectionBase, EveryMistakeOfTheSectionIsReported) {
  std::vector<std::string> lines = kBase;
  lines[3] = "  namespce: sandprobe";
  lines[9] = "  podStartTimeout: 0s";
  lines[16] = "          RestartPolicy: Never";
  auto m = Parse(Text(lines));
  ASSERT_FALSE(m.has_value());
  std::vector<std::string> got;
  for (const config::ConfigError& e : m.error().All()) got.push_back(e.ToString());
  ASSERT_EQ(got.size(), 3u) << ::testing::PrintToString(got);
  EXPECT_TRUE(
      got[0].starts_with("m.yaml:4:3: kubernetes.namespce: unknown field; did you mean "
                         "namespace?"))
      << got[0];
  EXPECT_TRUE(got[1].starts_with("m.yaml:10:20: kubernetes.podStartTimeout: must be at least 1s"))
      << got[1];
  EXPECT_TRUE(got[2].starts_with(
      "m.yaml:17:11: kubernetes.jobTemplate.spec.template.spec.RestartPolicy: unknown field; did "
      "you mean restartPolicy?"))
      << got[2];
}

// kubernetes.liveChange: the merge patch the driver sends and the fact it records.
TEST(KubeSectionBase, LiveChangeReadsAsAPatchOfLabels) {
  std::vector<std::string> lines = kBase;
  lines[10] = "  liveChange: {after: 2s, settle: 4s, addLabels: {example.com/sandboxed: \"true\"}}";
  auto m = Parse(Text(lines));
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  auto s = SettingsOf(*m);
  ASSERT_TRUE(s && s->live_change);
  EXPECT_EQ(s->live_change->after_s, 2);
  EXPECT_EQ(s->live_change->settle_s, 4);
  EXPECT_EQ(s->live_change->Patch().dump(),
            R"({"metadata":{"labels":{"example.com/sandboxed":"true"}}})");
  EXPECT_EQ(s->live_change->Describe(), "added label example.com/sandboxed=true");
  lines.push_back("limits: {timeout: 8s}");            // 3s + 5s would end with the probe: refused
  lines[10] = "  liveChange: {removeLabels: [a, b]}";  // after 3s, settle 5s by default
  auto short_timeout = Parse(Text(lines));
  ASSERT_FALSE(short_timeout.has_value());
  EXPECT_EQ(short_timeout.error().field, "kubernetes.liveChange");
  EXPECT_NE(short_timeout.error().message.find("after + settle (8s) must end before "
                                               "limits.timeout (8s)"),
            std::string::npos)
      << short_timeout.error().ToString();
  lines.back() = "limits: {timeout: 20s}";
  m = Parse(Text(lines));
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  s = SettingsOf(*m);
  ASSERT_TRUE(s && s->live_change);
  EXPECT_EQ(s->live_change->after_s, 3);
  EXPECT_EQ(s->live_change->Patch().dump(), R"({"metadata":{"labels":{"a":null,"b":null}}})");
  EXPECT_EQ(s->live_change->Describe(), "removed labels a, b");
  EXPECT_FALSE(SettingsOf(*Parse(Text(kBase)))->live_change);
  // The recommended labels are the user's to change.
  lines[10] = "  liveChange: {addLabels: {app.kubernetes.io/component: sandboxed}}";
  m = Parse(Text(lines));
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
}

TEST(KubeSectionBase, IpFamilyIsTheArmsFamilyAndItsProbesGetTheNodesAddresses) {
  std::vector<std::string> lines = kBase;
  EXPECT_EQ(SettingsOf(*Parse(Text(lines)))->ip_family, "");
  lines[10] = "  ipFamily: IPv6";
  auto m = Parse(Text(lines));
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  auto s = SettingsOf(*m);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ip_family, "IPv6");
  // Its probes get every address of the node (status.hostIPs) and the family to pick by.
  JobRequest request;
  request.run_id = "sp-r";
  request.arm = "a";
  const nlohmann::json job = BuildJob(*s, request);
  const nlohmann::json& env = job["spec"]["template"]["spec"]["containers"][0]["env"];
  ASSERT_EQ(env.size(), 2u) << env.dump();
  EXPECT_EQ(env[0]["valueFrom"]["fieldRef"]["fieldPath"], "status.hostIPs");
  EXPECT_EQ(env[1]["name"], "SANDPROBE_IP_FAMILY");
  EXPECT_EQ(env[1]["value"], "IPv6");
  // A control's Job for an IPv6 candidate's row: the invocation's family wins over the arm's.
  KubeSettings plain = *SettingsOf(*Parse(Text(kBase)));
  request.ip_family = "IPv6";
  const nlohmann::json twin = BuildJob(plain, request);
  const nlohmann::json& twin_env = twin["spec"]["template"]["spec"]["containers"][0]["env"];
  ASSERT_EQ(twin_env.size(), 2u) << twin_env.dump();
  EXPECT_EQ(twin_env[0]["valueFrom"]["fieldRef"]["fieldPath"], "status.hostIPs");
  EXPECT_EQ(twin_env[1]["value"], "IPv6");
  // The canary's Service of that family only, beside the default one.
  const nlohmann::json svc = BuildCanaryService("sp-r", "IPv6");
  EXPECT_EQ(svc["metadata"]["name"], CanaryName("sp-r") + "-v6");
  EXPECT_EQ(svc["spec"]["ipFamilies"], nlohmann::json::array({"IPv6"}));
  EXPECT_EQ(svc["spec"]["ipFamilyPolicy"], "SingleStack");
  EXPECT_FALSE(BuildCanaryService("sp-r")["spec"].contains("ipFamilies"));
  EXPECT_LE(CanaryServiceName(std::string(80, 'a'), "IPv4").size(), 63u);
}

TEST(KubeSectionBase, ANumberIsADurationInSeconds) {
  std::vector<std::string> lines = kBase;
  lines[7] = "  agedRerun: 90";  // 90 s, more than minPolicyAge 5s
  EXPECT_TRUE(Parse(Text(lines)).has_value());
}

TEST(KubeSectionBase, NullInATemplateRemovesAFieldAndIsNoFinding) {
  std::vector<std::string> lines = kBase;
  lines[15] = "          runtimeClassName: null";
  EXPECT_TRUE(Parse(Text(lines)).has_value());
}

// A null where the driver sets a default deletes it (a merge patch): an error at its place,
// each one, the hardening defaults kept (README: a null that deletes a default is refused).
TEST(KubeSectionBase, NullDeletingADriverDefaultIsAnError) {
  const std::string text =
      "name: m\ndriver: kubernetes\nlimits: {memory: 64Mi}\nkubernetes:\n  image: x\n"
      "  jobTemplate:\n    spec:\n      template:\n        spec:\n"
      "          automountServiceAccountToken: null\n"
      "          containers:\n            - name: probe\n"
      "              securityContext: {readOnlyRootFilesystem: ~}\n"
      "              resources: {limits: {memory: ~}}\n";
  const auto r = Parse(text);
  ASSERT_FALSE(r.has_value());
  std::vector<std::string> got;
  for (const auto& e : r.error().All()) got.push_back(e.field + " @" + std::to_string(e.line));
  EXPECT_EQ(got, (std::vector<std::string>{
                     "kubernetes.jobTemplate.spec.template.spec.automountServiceAccountToken @10",
                     "kubernetes.jobTemplate.spec.template.spec.containers[0].securityContext."
                     "readOnlyRootFilesystem @13",
                     "kubernetes.jobTemplate.spec.template.spec.containers[0].resources.limits."
                     "memory @14"}));
}

TEST(KubeSectionNotes, AnUnknownFieldFarFromEveryNameIsANoteNotAnError) {
  std::vector<std::string> lines = kBase;
  lines[16] = "          futureFeatureGate: true";  // a field of a newer Kubernetes, maybe
  const std::string text = Text(lines);
  ASSERT_TRUE(Parse(text).has_value());
  auto root = config::internal::ReadYaml(text, "m.yaml");
  ASSERT_TRUE(root.has_value());
  const std::vector<std::string> notes = KubernetesSectionNotes("m.yaml", *root);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_TRUE(notes[0].starts_with(
      "m.yaml:17:11: kubernetes.jobTemplate.spec.template.spec.futureFeatureGate: not a PodSpec "
      "field in Kubernetes API v1.32"))
      << notes[0];
  EXPECT_NE(notes[0].find("the preflight dry run decides"), std::string::npos);
  EXPECT_NE(notes[1].find("fieldValidation=Strict"), std::string::npos) << notes[1];
}

TEST(KubeSectionNotes, NoTemplateNoNotes) {
  auto root = config::internal::ReadYaml(
      "name: k\ndriver: kubernetes\nkubernetes: {image: x, namespace: sandprobe}\n", "k.yaml");
  ASSERT_TRUE(root.has_value());
  EXPECT_TRUE(KubernetesSectionNotes("k.yaml", *root).empty());
}

TEST(KubeNames, DnsLabelsAndSubdomains) {
  EXPECT_TRUE(IsDnsLabel("sandprobe"));
  EXPECT_TRUE(IsDnsLabel("a"));
  EXPECT_TRUE(IsDnsLabel("0-ns-9"));
  EXPECT_TRUE(IsDnsLabel(std::string(63, 'a')));
  EXPECT_FALSE(IsDnsLabel(std::string(64, 'a')));
  for (const char* bad : {"", "-ns", "ns-", "Ns", "n_s", "n.s", "n s"}) {
    EXPECT_FALSE(IsDnsLabel(bad)) << bad;
  }
  EXPECT_TRUE(IsDnsSubdomain("ip-10-0-0-1.eu-west-1.compute.internal"));
  EXPECT_FALSE(IsDnsSubdomain("node..1"));
  EXPECT_FALSE(IsDnsSubdomain("Node1"));
}

TEST(KubeNames, LabelSelectors) {
  for (const char* good : {"kubernetes.io/hostname=node-1", "role", "!gpu", "tier!=db,env==prod",
                           "role in (a, b)", "zone notin (x)", "size>3", "size < -1",
                           "a=", "pool in (a,)", "node-role.kubernetes.io/worker", " a = b , c "}) {
    EXPECT_TRUE(CheckLabelSelector(good).has_value())
        << good << ": " << CheckLabelSelector(good).error();
  }
  const std::pair<const char*, const char*> bad[] = {
      {"", "an empty selector"},
      {"a,,b", "an empty requirement"},
      {"=x", "it does not start with a key"},
      {"role==a b", "\"a b\" is not a label value"},
      {"Role In (a)", "after the key expected"},
      {"a in (b", "'(' without its ')'"},
      {"a in b", "after the key expected"},
      {"-bad=1", "\"-bad\" is not a label key"},
      {"x/y/z=1", "\"x/y/z\" is not a label key"},
      {"size>big", "> needs a whole number"},
      {"a)", "')' without its '('"},
  };
  for (const auto& [selector, message] : bad) {
    auto r = CheckLabelSelector(selector);
    ASSERT_FALSE(r.has_value()) << selector;
    EXPECT_NE(r.error().find(message), std::string::npos) << selector << ": " << r.error();
  }
}

}  // namespace
}  // namespace sandprobe::drivers::kube
