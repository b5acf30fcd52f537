// Bad input gets a clear error: every malformed manifest names the file, line and field.
#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>

namespace sandprobe::config {
namespace {

TEST(ManifestTest, ParsesCommandManifest) {
  auto m = ParseManifest(R"(name: bubblewrap
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
  EXPECT_EQ(m->driver_config["argv"].size(), 6u);
  EXPECT_EQ(m->driver_config["argv"][5], "{script}");
}

TEST(ManifestTest, ErrorsNameFileLineAndField) {
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
      {"name: x\ndriver: http\nhttp:\n  url: http://127.0.0.1:99999/x\n  preset: code-json\n", 4,
       "http.url", "1 to 65535"},
      {"name: x\ndriver: http\nhttp:\n  url: http://h:80/x\n  preset: code-json\n"
       "  healthTimeout: 0s\n",
       6, "http.healthTimeout", "more than 0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto m = ParseManifest(c.text, "manifests/bad.yaml");
    ASSERT_FALSE(m);
    EXPECT_EQ(m.error().file, "manifests/bad.yaml");
    EXPECT_EQ(m.error().line, c.line) << m.error().ToString();
    EXPECT_EQ(m.error().field, c.field) << m.error().ToString();
    EXPECT_NE(m.error().message.find(c.message_part), std::string::npos) << m.error().ToString();
    EXPECT_TRUE(m.error().ToString().starts_with("manifests/bad.yaml:")) << m.error().ToString();
  }
}

TEST(YamlTest, HostileDocumentsAreErrorsNotCrashes) {
  const struct {
    std::string text;
    const char* message_part;
  } cases[] = {
      {"name: a\nname: b\ndriver: local\n", "duplicate key"},
      {"name: a\ndriver: local\n---\nname: b\n", "2 YAML documents"},
      {"name: x\ndriver: local\nlocal: " + std::string(200, '[') + std::string(200, ']') + "\n",
       "nested deeper"},
      {"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
       "name: t\nprobes: [net.dns]\n",
       "aliases are expanded"},
  };
  for (const auto& c : cases) {
    auto s = ParseSuite(c.text, "bad.yaml");
    ASSERT_FALSE(s) << c.text.substr(0, 80);
    EXPECT_NE(s.error().message.find(c.message_part), std::string::npos) << s.error().ToString();
  }
  auto dir = LoadManifest(std::filesystem::temp_directory_path());
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().message.find("directory"), std::string::npos);
}

TEST(SuiteTest, ParsesAndRejects) {
  auto s = ParseSuite(R"(name: t
probes:
  - net.dns
  - id: res.memory-balloon
    level: advisory
    params: {target_mib: 64, url: "http://{canary.http}/"}
)",
                      "s.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  ASSERT_EQ(s->entries.size(), 2u);
  EXPECT_EQ(s->entries[1].level, core::Level::kAdvisory);
  EXPECT_EQ(s->entries[1].params["target_mib"], 64);
  EXPECT_EQ(s->entries[1].params["url"], "http://{canary.http}/");

  auto dup = ParseSuite("name: t\nprobes: [net.dns, net.dns]\n", "s.yaml");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message.find("twice"), std::string::npos);
  auto level = ParseSuite("name: t\nprobes:\n  - id: net.dns\n    level: must\n", "s.yaml");
  ASSERT_FALSE(level);
  EXPECT_EQ(level.error().field, "probes[0].level");
  EXPECT_EQ(level.error().line, 4);
  EXPECT_FALSE(ParseSuite("name: t\nprobes: []\n", "s.yaml"));
}

TEST(YamlTest, QuotedScalarsStayStrings) {
  auto s = ParseSuite(
      "name: t\nprobes:\n  - id: a.b\n    params: {x: \"10\", y: 10, z: true, w: 1.5}\n", "s.yaml");
  ASSERT_TRUE(s);
  const auto& p = s->entries[0].params;
  EXPECT_TRUE(p["x"].is_string());
  EXPECT_TRUE(p["y"].is_number_integer());
  EXPECT_TRUE(p["z"].is_boolean());
  EXPECT_TRUE(p["w"].is_number_float());
}

// A probe directory under the test's temp dir: probe.yaml (the common fields plus `extra`) and
// an empty probe.py.
std::filesystem::path WriteProbe(const std::string& name, const std::string& extra) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "probes" / name;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "probe.yaml") << "id: x.y\nlabel: y\ncategory: x\ndescription: d\n"
                                       "classify:\n  outcomes: {ok: contained}\n"
                                    << extra;
  std::ofstream(dir / "probe.py") << "result('ok', 'positive')\n";
  return dir;
}

TEST(ProbeTest, NeedsAndDeploy) {
  auto plain = LoadProbe(WriteProbe("plain", ""));
  ASSERT_TRUE(plain) << plain.error().ToString();
  EXPECT_TRUE(plain->needs.empty());
  EXPECT_FALSE(plain->Needs(core::Need::kPlantedEnv));
  EXPECT_EQ(plain->deploy, core::Deploy::kSandbox);

  auto both = LoadProbe(WriteProbe("both", "needs: [planted-env]\ndeploy: harness-admission\n"));
  ASSERT_TRUE(both) << both.error().ToString();
  EXPECT_TRUE(both->Needs(core::Need::kPlantedEnv));
  EXPECT_EQ(both->deploy, core::Deploy::kHarnessAdmission);
  auto sandbox = LoadProbe(WriteProbe("sandbox", "deploy: sandbox\n"));
  ASSERT_TRUE(sandbox) << sandbox.error().ToString();
  EXPECT_EQ(sandbox->deploy, core::Deploy::kSandbox);

  const struct {
    const char* extra;
    int line, column;
    const char* field;
  } bad[] = {
      {"needs: [planted-env, planted-file]\n", 7, 22, "needs[1]"},
      {"needs: planted-env\n", 7, 8, "needs"},
      {"needs: [[planted-env]]\n", 7, 9, "needs[0]"},
      {"deploy: admission\n", 7, 9, "deploy"},
      {"deploy: [sandbox]\n", 7, 9, "deploy"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.extra);
    auto p = LoadProbe(WriteProbe("bad", b.extra));
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().line, b.line) << p.error().ToString();
    EXPECT_EQ(p.error().column, b.column) << p.error().ToString();
    EXPECT_EQ(p.error().field, b.field) << p.error().ToString();
    EXPECT_TRUE(p.error().ToString().ends_with("probe.yaml:" + std::to_string(b.line) + ":" +
                                               std::to_string(b.column) + ": " + b.field + ": " +
                                               p.error().message))
        << p.error().ToString();
  }
}

// The repository's own probes, suites and manifests must load.
TEST(RepoFilesTest, ShippedFilesLoad) {
  const std::filesystem::path root = SANDPROBE_SOURCE_ROOT;
  auto probes = LoadProbeTree(root / "probes");
  ASSERT_TRUE(probes) << probes.error().ToString();
  EXPECT_GE(probes->size(), 13u);
  for (const auto& p : *probes) {
    // The properties the runner and drivers act on are declared, not keyed on probe ids.
    EXPECT_EQ(p.Needs(core::Need::kPlantedEnv), p.id == "cred.env-secrets") << p.id;
    EXPECT_EQ(p.deploy == core::Deploy::kHarnessAdmission, p.id == "platform.runtime-class")
        << p.id;
    EXPECT_FALSE(p.script.empty()) << p.id;
    EXPECT_FALSE(p.classify.outcomes.empty()) << p.id;
  }
  for (const char* m : {"manifests/local.yaml", "manifests/bubblewrap.yaml"}) {
    auto loaded = LoadManifest(root / m);
    EXPECT_TRUE(loaded) << loaded.error().ToString();
  }
  auto suite = LoadSuite(root / "suites/default.yaml");
  ASSERT_TRUE(suite) << suite.error().ToString();
  for (const auto& e : suite->entries) {
    EXPECT_TRUE(std::ranges::any_of(*probes, [&](const auto& p) { return p.id == e.probe; }))
        << e.probe;
  }
}

}  // namespace
}  // namespace sandprobe::config
