// The driver registry: manifests are checked by their kind's own section rules (file, line and
// field in every error), the registry is the one list of kinds, and adding a kind is a folder
// plus one line in the table — shown here with a minimal driver that no product code knows.
#include "drivers/registry.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "config/yaml_util.h"
#include "core/output.h"
#include "drivers/command/command_driver.h"
#include "drivers/http/http_driver.h"
#include "drivers/kubernetes/objects.h"
#include "runner/run.h"

namespace sandprobe::drivers {
namespace {

TEST(ManifestSectionsTest, ParsesCommandManifest) {
  auto m = Registry().ParseManifest(R"(name: bubblewrap
driver: command
control: local
description: careful bwrap
limits: {timeout: 10s, memory: 256Mi, tmp: 32Mi, pids: 64, output: 16Ki}
weakens: [shares the host network]
command:
  argv: [bwrap, --unshare-all, python3, -u, -c, "{script}"]
)",
                                    "m.yaml");
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->name, "bubblewrap");
  EXPECT_EQ(m->control, "local");
  EXPECT_DOUBLE_EQ(*m->limits.timeout_s, 10);
  EXPECT_EQ(*m->limits.memory_bytes, 256u << 20);
  EXPECT_EQ(*m->limits.pids, 64u);
  EXPECT_EQ(*m->limits.output_bytes, 16u << 10);
  EXPECT_EQ(m->weakens.size(), 1u);
  // The section was read once, into the driver's own configuration.
  auto config = SectionOf<CommandConfig>(*m);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ((*config)->argv.size(), 6u);
  EXPECT_EQ((*config)->argv[5], "{script}");
  EXPECT_FALSE((*config)->stdin_mode);
  EXPECT_FALSE((*config)->pass_planted_fds);
}

// Values are taken as written in the YAML: a scalar that looks like a number keeps its spelling
// (an octal mode, a leading zero), and headers keep the file's order.
TEST(ManifestSectionsTest, SectionValuesAreTakenAsWritten) {
  auto c = Registry().ParseManifest(
      "name: x\ndriver: command\ncommand:\n  argv: [chmod, 0700, 1e3, \"{script}\"]\n"
      "  after: [echo, 007]\n",
      "m.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  auto command = SectionOf<CommandConfig>(*c);
  ASSERT_TRUE(command) << command.error();
  EXPECT_EQ((*command)->argv, (std::vector<std::string>{"chmod", "0700", "1e3", "{script}"}));
  EXPECT_EQ((*command)->after, (std::vector<std::string>{"echo", "007"}));
  auto h = Registry().ParseManifest(
      "name: x\ndriver: http\nhttp:\n  url: http://h/x\n  preset: code-json\n"
      "  headers: {X-Zeta: 010, Accept: a, X-Alpha: \"b\"}\n",
      "m.yaml");
  ASSERT_TRUE(h) << h.error().ToString();
  auto http = SectionOf<HttpConfig>(*h);
  ASSERT_TRUE(http) << http.error();
  EXPECT_EQ((*http)->headers, (std::vector<std::pair<std::string, std::string>>{
                                  {"X-Zeta", "010"}, {"Accept", "a"}, {"X-Alpha", "b"}}));
}

// A manifest built in code carries no section: a kind that needs one says so instead of running
// with an empty configuration; the local baseline needs none.
TEST(ManifestSectionsTest, AManifestWithoutItsSectionIsASetupError) {
  core::Manifest m;
  m.name = "c";
  m.source_path = "c.yaml";
  for (const char* kind : {"command", "docker", "http", "kubernetes"}) {
    m.driver = kind;
    auto d = Registry().Make(m, {});
    ASSERT_FALSE(d) << kind;
    EXPECT_NE(d.error().message.find(fmt::format("c.yaml: its {} section was not read", kind)),
              std::string::npos)
        << d.error().message;
  }
  m.driver = "local";
  EXPECT_TRUE(Registry().Make(m, {}));
}

TEST(ManifestSectionsTest, ErrorsNameFileLineAndField) {
  const struct {
    const char* text;
    int line;
    const char* field;
    const char* message_part;
  } cases[] = {
      {"driver: command\ncommand: {argv: [x, \"{script}\"]}\n", 1, "name", "missing"},
      {"name: x\ndriver: dockr\n", 2, "driver", "unknown driver"},
      {"name: x\ndriver: command\n", 1, "command", "command: section"},
      {"name: x\ndriver: command\ncommand:\n  argv: [a, b]\n", 4, "command.argv", "{script}"},
      {"name: x\ndriver: command\ncommand:\n  argv: [a, \"{script}\", \"{script}\"]\n", 4,
       "command.argv", "found 2"},
      {"name: x\ndriver: command\ncommand:\n  argv: [a, \"x{script}\"]\n", 4, "command.argv[1]",
       "whole argument"},
      {"name: x\ndriver: command\ncommand:\n  argv: [a, [b]]\n", 4, "command.argv[1]", "string"},
      {"name: x\ndriver: command\ncomand:\n  argv: [a]\n", 3, "comand", "unknown field"},
      {"name: x\ndriver: local\nlimits:\n  memory: lots\n", 4, "limits.memory", "not a size"},
      {"name: x\ndriver: local\nlimits:\n  timeout: 10x\n", 4, "limits.timeout", "unknown unit"},
      {"name: x\ndriver: local\nlimits:\n  pids: 6.5\n", 4, "limits.pids", "whole number"},
      {"name: x\ndriver: local\nlimits: {cpu: 1}\n", 3, "limits.cpu", "unknown field"},
      {"name: \"Bad Name|\"\ndriver: local\n", 1, "name", "[a-z0-9"},
      {"name: x\ndriver: local\n  bad: [\n", 3, "", "YAML syntax"},
      {"- just\n- a list\n", 1, "", "mapping"},
      {"name: x\ndriver: local\nlocal: {argv: [python3]}\n", 3, "local.argv", "{script}"},
      {"name: x\ndriver: command\ncommand:\n  argv: [a, \"{script}\"]\n  tty: \"true\"\n", 5,
       "command.tty", "true or false"},
      {"name: x\ndriver: command\ncommand:\n  argv: [a]\n  stdin: true\n  tty: true\n", 6,
       "command.tty", "exclude each other"},
      {"name: x\ndriver: local\nlocal: {tty: yes please}\n", 3, "local.tty", "true or false"},
      {"name: x\ndriver: command\ncommand:\n  argv: [a, \"{script}\"]\n  after: [x, "
       "\"{script}\"]\n",
       5, "command.after[1]", "without {script}"},
      {"name: x\ndriver: http\nhttp:\n  url: http://127.0.0.1:99999/x\n  preset: code-json\n", 4,
       "http.url", "1 to 65535"},
      {"name: x\ndriver: http\nhttp:\n  url: http:///x\n  preset: code-json\n", 4, "http.url",
       "host"},
      {"name: x\ndriver: http\nhttp:\n  url: http://h/x\n  health: https://:8080/h\n"
       "  preset: code-json\n",
       5, "http.health", "host"},
      {"name: x\ndriver: http\nhttp:\n  url: http://h:80/x\n  preset: code-json\n"
       "  healthTimeout: 0s\n",
       6, "http.healthTimeout", "more than 0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto m = Registry().ParseManifest(c.text, "manifests/bad.yaml");
    ASSERT_FALSE(m);
    EXPECT_EQ(m.error().file, "manifests/bad.yaml");
    EXPECT_EQ(m.error().line, c.line) << m.error().ToString();
    EXPECT_EQ(m.error().field, c.field) << m.error().ToString();
    EXPECT_NE(m.error().message.find(c.message_part), std::string::npos) << m.error().ToString();
    EXPECT_TRUE(m.error().ToString().starts_with("manifests/bad.yaml:")) << m.error().ToString();
  }
}

TEST(RegistryTest, ListsTheBuiltInKindsOnce) {
  std::vector<std::string> names;
  for (const DriverKind& k : Registry().kinds()) {
    names.emplace_back(k.name);
    EXPECT_TRUE(k.make) << k.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"local", "command", "docker", "kubernetes", "http"}));
  EXPECT_EQ(Registry().Names(), "local, command, docker, kubernetes or http");
  ASSERT_NE(Registry().Find("local"), nullptr);
  EXPECT_TRUE(Registry().Find("local")->baseline);
  EXPECT_FALSE(Registry().Find("docker")->baseline);
  EXPECT_EQ(Registry().Find("dockr"), nullptr);
  // The unknown-driver message lists the registry's kinds.
  auto m = Registry().ParseManifest("name: x\ndriver: podman\n", "p.yaml");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("(expected local, command, docker, kubernetes or http)"),
            std::string::npos)
      << m.error().ToString();
}

TEST(RegistryTest, AMissingKindIsASetupErrorNamingTheKnownOnes) {
  core::Manifest m;
  m.driver = "podman";
  m.source_path = "p.yaml";
  auto d = Registry().Make(m, {});
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("not available in this build"), std::string::npos);
  EXPECT_EQ(d.error().hint, "use a local, command, docker, kubernetes or http manifest");
}

TEST(RegistryTest, ShippedManifestsLoadThroughTheirKinds) {
  const std::filesystem::path root = SANDPROBE_SOURCE_ROOT;
  for (const char* path :
       {"manifests/local.yaml", "manifests/bubblewrap.yaml", "manifests/bubblewrap-bounded.yaml",
        "manifests/docker/hardened.yaml", "manifests/docker/cli-hardened.yaml",
        "manifests/kubernetes/deny-egress.yaml", "manifests/http/minimal.yaml"}) {
    auto m = LoadManifest(root / path);
    ASSERT_TRUE(m) << m.error().ToString();
    auto d = MakeDriver(*m, {});
    EXPECT_TRUE(d) << path << ": " << (d ? "" : d.error().message);
    if (d) {
      EXPECT_EQ((*d)->kind(), m->driver);
    }
  }
}

// A minimal driver kind, defined only here: an `echo` sandbox that "runs" a script by answering
// with the record the preflight probe would print. Its folder would hold this code; the registry
// table gets one line.
class EchoDriver : public Driver {
 public:
  EchoDriver(std::string reply, DriverContext context)
      : reply_(std::move(reply)), context_(std::move(context)) {}
  std::string_view kind() const override { return "echo"; }
  std::expected<void, SetupError> Prepare() override { return {}; }
  core::Observation Execute(const Invocation& inv, const std::atomic<bool>&) override {
    core::Observation obs;
    core::OutputCollector out(context_.nonce);
    // The harness's preflight asks every arm for "ok"; every other probe gets the manifest's reply.
    const std::string outcome = inv.probe == "harness.preflight" ? "ok" : reply_;
    out.FeedStdout(fmt::format("{} {} {{\"kind\":\"result\",\"outcome\":\"{}\"}}\n",
                               core::kRecordMarker, context_.nonce, outcome));
    out.Finish(obs);
    obs.ending = core::Ending::kExited;
    obs.driver_facts["echoed_bytes"] = inv.script.size();
    return obs;
  }

 private:
  std::string reply_;
  DriverContext context_;
};

DriverKind EchoKind() {
  DriverKind k;
  k.name = "echo";
  k.read_section = [](const std::string& file, const YAML::Node& root,
                      std::any& out) -> std::expected<void, config::ConfigError> {
    const YAML::Node section = root["echo"];
    if (!section.IsMap() || !section["reply"].IsDefined() || !section["reply"].IsScalar()) {
      return std::unexpected(config::internal::At(file, section.IsDefined() ? section : root,
                                                  "echo.reply", "required field is missing"));
    }
    out = section["reply"].Scalar();
    return {};
  };
  k.make = [](const core::Manifest& m,
              const DriverContext& context) -> std::expected<std::unique_ptr<Driver>, SetupError> {
    auto reply = SectionOf<std::string>(m);
    if (!reply) return std::unexpected(SetupError{reply.error(), ""});
    return std::make_unique<EchoDriver>(**reply, context);
  };
  return k;
}

// The built-in table plus one line.
DriverRegistry WithEcho() {
  std::vector<DriverKind> kinds(Registry().kinds().begin(), Registry().kinds().end());
  kinds.push_back(EchoKind());
  return DriverRegistry(std::move(kinds));
}

TEST(RegistryTest, AddingAKindIsOneLine) {
  // Unknown to the built-in registry...
  const std::string text = "name: echo-arm\ndriver: echo\necho: {reply: ok}\n";
  auto unknown = Registry().ParseManifest(text, "echo.yaml");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().field, "echo");  // the section key is not a known field either
  // ...and fully usable once registered: its section rules, its factory, its driver.
  const DriverRegistry registry = WithEcho();
  EXPECT_EQ(registry.Names(), "local, command, docker, kubernetes, http or echo");
  auto bad = registry.ParseManifest("name: e\ndriver: echo\necho: {}\n", "echo.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "echo.reply");
  EXPECT_EQ(bad.error().line, 3);
  auto m = registry.ParseManifest(text, "echo.yaml");
  ASSERT_TRUE(m) << m.error().ToString();
  auto driver = registry.Make(*m, DriverContext{"n0nce", "", 2, "run"});
  ASSERT_TRUE(driver) << driver.error().message;
  EXPECT_EQ((*driver)->kind(), "echo");
  const std::atomic<bool> cancel{false};
  core::Observation obs =
      (*driver)->Execute({"harness.preflight", "i1", "print(1)", 5, {}}, cancel);
  ASSERT_TRUE(obs.result.has_value());
  EXPECT_EQ(obs.result->value("outcome", ""), "ok");
  EXPECT_EQ(obs.driver_facts["echoed_bytes"], 8);
}

// The one-line kind in a whole run: manifests loaded through the registry, drivers built by its
// factory, a control that shows the exposure and a candidate that contains it.
TEST(RegistryTest, AnAddedKindRunsAWholeMatrix) {
  const DriverRegistry registry = WithEcho();
  auto control = registry.ParseManifest("name: echo-open\ndriver: echo\necho: {reply: reached}\n",
                                        "open.yaml");
  auto candidate = registry.ParseManifest(
      "name: echo-shut\ndriver: echo\ncontrol: echo-open\necho: {reply: blocked}\n", "shut.yaml");
  ASSERT_TRUE(control && candidate);
  core::ProbeDescriptor probe;
  probe.id = "net.echo";
  probe.label = "echo";
  probe.category = "net";
  probe.drivers = {"all"};
  probe.classify.outcomes = {{"reached", core::Exposure::kExposed},
                             {"blocked", core::Exposure::kContained}};
  probe.script = "pass\n";
  runner::RunOptions options;
  options.suite.name = "echo";
  options.suite.entries = {{"net.echo", core::Level::kRequired, {}}};
  options.probes = {probe};
  options.controls = {*control};
  options.candidates = {*candidate};
  options.preamble = "# preamble\n";
  options.canary_dir = std::filesystem::path(::testing::TempDir()) / "registry_test_echo";
  std::filesystem::create_directories(options.canary_dir);
  options.make_driver = [&registry](const core::Manifest& m, const DriverContext& c) {
    return registry.Make(m, c);
  };
  runner::RunObserver observer;
  const std::atomic<bool> cancel{false};
  auto matrix = runner::Run(options, observer, cancel);
  ASSERT_TRUE(matrix) << matrix.error().message;
  ASSERT_EQ(matrix->verdicts.size(), 1u);
  EXPECT_EQ(matrix->verdicts[0].candidate, "echo-shut");
  EXPECT_EQ(matrix->verdicts[0].verdict.kind, core::VerdictKind::kPass)
      << matrix->verdicts[0].verdict.reason;
  EXPECT_EQ(matrix->verdicts[0].verdict.validated_by, "echo-open");
  EXPECT_EQ(core::RunExitCode(*matrix), 0);
}

// A section field of the wrong type (read by the driver as JSON) is a setup error, not a crash.
// The docker section check refuses it on load (docker_section.h); a manifest built in code has
// no such check.
TEST(RegistryTest, AWrongTypeInASectionIsASetupError) {
  auto loaded = Registry().ParseManifest(
      "name: d\ndriver: docker\ndocker: {image: sandprobe-probe:local, endpoint: 5}\n", "d.yaml");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().field, "docker.endpoint");
  core::Manifest m;
  m.name = "d";
  m.driver = "docker";
  m.source_path = "d.yaml";
  m.section = nlohmann::json{{"image", "sandprobe-probe:local"}, {"endpoint", 5}};
  auto d = Registry().Make(m, {});
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("d.yaml: its docker section cannot be used"), std::string::npos)
      << d.error().message;
}

TEST(RegistryTest, AThrowingSectionReaderIsAnErrorValue) {
  DriverKind careless = EchoKind();
  careless.read_section = [](const std::string&, const YAML::Node& root,
                             std::any& out) -> std::expected<void, config::ConfigError> {
    out = root["echo"]["reply"].as<int>();  // throws on a string
    return {};
  };
  const DriverRegistry registry({careless});
  auto m = registry.ParseManifest("name: e\ndriver: echo\necho: {reply: ok}\n", "e.yaml");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().field, "echo");
  EXPECT_EQ(m.error().line, 3);
}

// Kubernetes arms as a manifest file gives them (kubernetes.<extra> beside a policy and an image).
core::Manifest KubeArm(const std::string& name, const std::string& extra) {
  auto m = Registry().ParseManifest(
      fmt::format("name: {}\ndriver: kubernetes\nkubernetes: {{image: i, networkPolicy: "
                  "deny-all-egress, {}}}\n",
                  name, extra),
      name + ".yaml");
  EXPECT_TRUE(m) << m.error().ToString();
  return m.value_or(core::Manifest{});
}

const kube::KubeSettings& Kube(const core::Manifest& m) {
  return std::any_cast<const kube::KubeSettings&>(m.section);
}

TEST(RegistryTest, ExpandArmsAsksOnlyKindsThatDeriveArms) {
  std::vector<core::Manifest> arms = {KubeArm("k", "agedRerun: 60s"), core::Manifest{}};
  arms[1].name = "b";
  arms[1].driver = "command";
  ASSERT_TRUE(Registry().ExpandArms(arms, {}));
  ASSERT_EQ(arms.size(), 3u);
  EXPECT_EQ(arms[0].name, "k");
  EXPECT_EQ(arms[1].name, "k-aged");
  EXPECT_EQ(Kube(arms[1]).min_policy_age_s, 60);
  EXPECT_EQ(Kube(arms[0]).min_policy_age_s, 0);
  EXPECT_FALSE(Kube(arms[0]).aged_rerun_s || Kube(arms[1]).aged_rerun_s);
  EXPECT_EQ(arms[2].name, "b");
  // A kubernetes manifest built in code has no settings to derive arms from: an error, no guess.
  std::vector<core::Manifest> bare(1);
  bare[0].driver = "kubernetes";
  bare[0].source_path = "bare.yaml";
  auto bad = Registry().ExpandArms(bare, {});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("bare.yaml: its kubernetes section was not read"), std::string::npos)
      << bad.error();
}

TEST(RegistryTest, SettledRerunAddsATwinAfterEachArm) {
  std::vector<core::Manifest> arms = {KubeArm("k", "agedRerun: 60s, settledRerun: 5s")};
  ASSERT_TRUE(Registry().ExpandArms(arms, {}));
  std::vector<std::string> names;
  for (const auto& a : arms) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"k", "k-settled", "k-aged", "k-aged-settled"}));
  EXPECT_EQ(Kube(arms[1]).pod_settle_s, 5);
  EXPECT_EQ(Kube(arms[3]).pod_settle_s, 5);
  EXPECT_EQ(Kube(arms[3]).min_policy_age_s, 60);
  EXPECT_EQ(Kube(arms[2]).min_policy_age_s, 60);
  for (const auto& a : arms) EXPECT_FALSE(Kube(a).settled_rerun_s) << a.name;
  EXPECT_EQ(Kube(arms[0]).pod_settle_s, 0);
  EXPECT_EQ(Kube(arms[2]).pod_settle_s, 0);
  // A duration the twins could not use never gets this far: the section is read on load.
  auto bad = Registry().ParseManifest(
      "name: k\ndriver: kubernetes\nkubernetes: {image: i, networkPolicy: deny-all-egress, "
      "settledRerun: true}\n",
      "k.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "kubernetes.settledRerun");
  EXPECT_EQ(bad.error().line, 3);
}

}  // namespace
}  // namespace sandprobe::drivers
