// Bad input gets a clear error: every malformed manifest names the file, line and field.
#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "config/manifest_sections.h"
#include "config/yaml_util.h"

namespace sandprobe::config {
namespace {

// Manifests: common fields here; every driver section through the registry (drivers/registry_test).
TEST(ManifestTest, CommonFieldsWithAPassThroughSection) {
  const DriverSection kinds[] = {{"plain", nullptr}};
  auto m = ParseManifest("name: p\ndriver: plain\nplain: {anything: [1, two]}\n", "p.yaml", kinds);
  ASSERT_TRUE(m) << m.error().ToString();
  const auto* section = std::any_cast<nlohmann::json>(&m->section);
  ASSERT_NE(section, nullptr);
  EXPECT_EQ((*section)["anything"][1], "two");
  auto unknown = ParseManifest("name: p\ndriver: fancy\n", "p.yaml", kinds);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "unknown driver 'fancy' (expected plain)");
  auto extra = ParseManifest("name: p\ndriver: plain\nfancy: {}\n", "p.yaml", kinds);
  ASSERT_FALSE(extra);
  EXPECT_EQ(extra.error().field, "fancy");
  EXPECT_NE(
      extra.error().message.find("name, driver, control, description, limits, weakens, plain"),
      std::string::npos)
      << extra.error().ToString();
}

// limits.noexec and limits.seccomp: the claims fs.write-exec and kernel.syscalls judge.
TEST(ManifestTest, ClaimsTable) {
  const DriverSection kinds[] = {{"plain", nullptr}};
  const auto load = [&](const std::string& limits) {
    return ParseManifest("name: p\ndriver: plain\nlimits:\n" + limits, "p.yaml", kinds);
  };
  auto every = load("  noexec: true\n  seccomp: default\n");
  ASSERT_TRUE(every) << every.error().ToString();
  EXPECT_EQ(every->limits.noexec, (core::NoexecClaim{.every_writable = true, .paths = {}}));
  EXPECT_EQ(every->limits.seccomp, core::SeccompClaim::kDefault);
  auto listed = load("  noexec: [/tmp/, //dev/shm]\n");
  ASSERT_TRUE(listed) << listed.error().ToString();
  EXPECT_EQ(listed->limits.noexec,
            (core::NoexecClaim{.every_writable = false, .paths = {"/tmp", "/dev/shm"}}));
  EXPECT_FALSE(listed->limits.seccomp);
  auto none = load("  noexec: false\n");
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_FALSE(none->limits.noexec);  // false claims nothing, as if absent
  const struct {
    std::string limits;
    int line;
    int column;
    const char* field;
    const char* says;
  } bad[] = {
      {"  noexec: yes please\n", 4, 11, "limits.noexec", "expected true (every writable path)"},
      {"  noexec: 1\n", 4, 11, "limits.noexec", "expected true"},
      {"  noexec: []\n", 4, 11, "limits.noexec", "or a list of paths"},
      {"  noexec: {path: /tmp}\n", 4, 11, "limits.noexec", "or a list of paths"},
      {"  noexec: [/tmp, tmp]\n", 4, 18, "limits.noexec[1]", "not an absolute path"},
      {"  noexec:\n    - /tmp\n    - /tmp/\n", 6, 7, "limits.noexec[1]", "/tmp is listed twice"},
      {"  noexec: [/var/../tmp]\n", 4, 12, "limits.noexec[0]", "'..' part"},
      {"  noexec: [[/tmp]]\n", 4, 12, "limits.noexec[0]", "expected a path"},
      {"  seccomp: defualt\n", 4, 12, "limits.seccomp", "did you mean default?"},
      {"  seccomp: unconfined\n", 4, 12, "limits.seccomp", "(expected default)"},
      {"  seccomp: [default]\n", 4, 12, "limits.seccomp", "expected a value"},
      {"  noexce: true\n", 4, 3, "limits.noexce", "did you mean noexec?"},
      {"  secomp: default\n", 4, 3, "limits.secomp", "did you mean seccomp?"},
  };
  for (const auto& c : bad) {
    auto m = load(c.limits);
    ASSERT_FALSE(m) << c.limits;
    EXPECT_EQ(m.error().field, c.field) << m.error().ToString();
    EXPECT_EQ(m.error().line, c.line) << m.error().ToString();
    EXPECT_EQ(m.error().column, c.column) << m.error().ToString();
    EXPECT_NE(m.error().message.find(c.says), std::string::npos) << m.error().ToString();
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
  auto dir = LoadManifest(std::filesystem::temp_directory_path(), {});
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.error().message.find("directory"), std::string::npos);
  auto device = LoadSuite("/dev/zero");  // never ends: refused before reading
  ASSERT_FALSE(device);
  EXPECT_NE(device.error().message.find("not a regular file"), std::string::npos);
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

TEST(SuiteTest, CriteriaGroupTheSuitesRows) {
  auto s = ParseSuite(R"(name: t
criteria:
  - name: "No network egress: no DNS, no HTTP, no sockets"
    probes: [net.dns, net.udp]
  - name: Bounded execution
    probes:
      - res.cpu-loop
probes: [net.dns, net.udp, res.cpu-loop, fs.write-root]
)",
                      "s.yaml");
  ASSERT_TRUE(s) << s.error().ToString();
  ASSERT_EQ(s->criteria.size(), 2u);
  EXPECT_EQ(s->criteria[0].name, "No network egress: no DNS, no HTTP, no sockets");
  EXPECT_EQ(s->criteria[0].probes, (std::vector<std::string>{"net.dns", "net.udp"}));
  EXPECT_EQ(s->criteria[1].probes, (std::vector<std::string>{"res.cpu-loop"}));
  auto none = ParseSuite("name: t\nprobes: [net.dns]\n", "s.yaml");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->criteria.empty());
}

TEST(SuiteTest, CriteriaErrorsNameLineColumnAndField) {
  const std::string probes = "probes: [net.dns, net.udp, res.cpu-loop]\n";
  const struct {
    std::string criteria;
    int line, column;
    const char* field;
    const char* message_part;
  } cases[] = {
      // a probe id that is not one of the suite's entries, with the nearest one suggested
      {"criteria:\n  - name: egress\n    probes: [net.dns, net.udpp]\n", 4, 23,
       "criteria[0].probes[1]", "'net.udpp' is not in this suite's probes; did you mean net.udp?"},
      {"criteria:\n  - name: egress\n    probes: [net.http-by-name]\n", 4, 14,
       "criteria[0].probes[0]", "a criterion groups rows the suite runs"},
      // strict keys, with a suggestion
      {"criteria:\n  - name: egress\n    probe: [net.dns]\n", 4, 5, "criteria[0].probe",
       "unknown field; did you mean probes?"},
      {"criteria:\n  - nmae: egress\n    probes: [net.dns]\n", 3, 5, "criteria[0].nmae",
       "did you mean name?"},
      {"criteria:\n  - probes: [net.dns]\n", 3, 5, "criteria[0].name", "required field"},
      {"criteria:\n  - name: \"  \"\n    probes: [net.dns]\n", 3, 11, "criteria[0].name",
       "in words"},
      {"criteria:\n  - name: egress\n    probes: []\n", 4, 13, "criteria[0].probes",
       "non-empty list"},
      {"criteria:\n  - name: egress\n", 3, 5, "criteria[0].probes", "non-empty list"},
      {"criteria:\n  - name: egress\n    probes: net.dns\n", 4, 13, "criteria[0].probes",
       "non-empty list"},
      {"criteria:\n  - name: egress\n    probes: [net.dns, net.dns]\n", 4, 23,
       "criteria[0].probes[1]", "listed twice"},
      {"criteria:\n  - name: egress\n    probes: [[net.dns]]\n", 4, 14, "criteria[0].probes[0]",
       "expected a probe id"},
      {"criteria:\n  - name: a\n    probes: [net.dns]\n  - name: a\n    probes: [net.udp]\n", 5, 11,
       "criteria[1].name", "listed twice"},
      {"criteria:\n  - egress\n", 3, 5, "criteria[0]", "expected a mapping"},
      {"criteria: {egress: [net.dns]}\n", 2, 11, "criteria", "non-empty list of criteria"},
      {"criteria: []\n", 2, 11, "criteria", "non-empty list of criteria"},
      {"critera:\n  - name: egress\n", 2, 1, "critera", "did you mean criteria?"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.criteria);
    auto s = ParseSuite("name: t\n" + c.criteria + probes, "s.yaml");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().line, c.line) << s.error().ToString();
    EXPECT_EQ(s.error().column, c.column) << s.error().ToString();
    EXPECT_EQ(s.error().field, c.field) << s.error().ToString();
    EXPECT_NE(s.error().message.find(c.message_part), std::string::npos) << s.error().ToString();
  }
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
  auto live = LoadProbe(WriteProbe("live", "needs: [live-canary, planted-env]\n"));
  ASSERT_TRUE(live) << live.error().ToString();
  EXPECT_TRUE(live->Needs(core::Need::kLiveCanary));
  EXPECT_TRUE(live->Needs(core::Need::kPlantedEnv));
  EXPECT_FALSE(both->Needs(core::Need::kLiveCanary));
  auto sandbox = LoadProbe(WriteProbe("sandbox", "deploy: sandbox\n"));
  ASSERT_TRUE(sandbox) << sandbox.error().ToString();
  EXPECT_EQ(sandbox->deploy, core::Deploy::kSandbox);
  EXPECT_EQ(sandbox->measures, "");
  auto interfaces = LoadProbe(WriteProbe("interfaces", "measures: interfaces\n"));
  ASSERT_TRUE(interfaces) << interfaces.error().ToString();
  EXPECT_EQ(interfaces->measures, "interfaces");
  EXPECT_FALSE(interfaces->beyond_policy);
  auto beyond = LoadProbe(WriteProbe("beyond", "beyond_policy: true\n"));
  ASSERT_TRUE(beyond) << beyond.error().ToString();
  EXPECT_TRUE(beyond->beyond_policy);

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
      {"measures: traffic\n", 7, 11, "measures"},
      {"beyond_policy: yes please\n", 7, 16, "beyond_policy"},
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

// classify.canary_hit_kinds: the kinds the canaries log, a non-empty list (cred.cloud-metadata).
TEST(ProbeTest, CanaryHitKinds) {
  auto plain = LoadProbe(WriteProbe("kinds-none", ""));
  ASSERT_TRUE(plain) << plain.error().ToString();
  EXPECT_TRUE(plain->classify.canary_hit_kinds.empty());
  auto kinds = LoadProbe(WriteProbe("kinds", "  canary_hit_kinds: [credential, dns]\n"));
  ASSERT_TRUE(kinds) << kinds.error().ToString();
  EXPECT_EQ(kinds->classify.canary_hit_kinds, (std::vector<std::string>{"credential", "dns"}));
  const struct {
    const char* extra;
    int column;
  } bad[] = {{"  canary_hit_kinds: [http, banner]\n", 28},
             {"  canary_hit_kinds: credential\n", 21},
             {"  canary_hit_kinds: []\n", 21}};
  for (const auto& b : bad) {
    SCOPED_TRACE(b.extra);
    auto p = LoadProbe(WriteProbe("kinds-bad", b.extra));
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().line, 7) << p.error().ToString();
    EXPECT_EQ(p.error().column, b.column) << p.error().ToString();
    EXPECT_EQ(p.error().field, "classify.canary_hit_kinds") << p.error().ToString();
  }
}

// classify.live_change: true or false, nothing else.
TEST(ProbeTest, LiveChange) {
  auto live = LoadProbe(WriteProbe("live", "  live_change: true\n"));
  ASSERT_TRUE(live) << live.error().ToString();
  EXPECT_TRUE(live->classify.live_change);
  auto plain = LoadProbe(WriteProbe("live-none", ""));
  ASSERT_TRUE(plain) << plain.error().ToString();
  EXPECT_FALSE(plain->classify.live_change);
  auto bad = LoadProbe(WriteProbe("live-bad", "  live_change: sometimes\n"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().line, 7) << bad.error().ToString();
  EXPECT_EQ(bad.error().field, "classify.live_change") << bad.error().ToString();
}

TEST(ProbeTest, LiveTarget) {
  auto write = [](const std::string& name, const std::string& rule) {
    const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "probes" / name;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "probe.yaml")
        << "id: x.y\nlabel: y\ncategory: x\ndescription: d\nclassify:\n"
           "  outcomes: {reached: exposed, refused: exposed, blocked: contained}\n"
        << rule;
    std::ofstream(dir / "probe.py") << "result('ok', 'positive')\n";
    return dir;
  };
  auto ok = LoadProbe(write("live",
                            "  live_target: {refused: refused, reached: [reached], "
                            "target: target}\n"));
  ASSERT_TRUE(ok) << ok.error().ToString();
  ASSERT_TRUE(ok->classify.live_target);
  EXPECT_EQ(ok->classify.live_target->refused, "refused");
  EXPECT_EQ(ok->classify.live_target->reached, std::vector<std::string>{"reached"});
  EXPECT_EQ(ok->classify.live_target->target, "target");
  const struct {
    const char* rule;
    int column;
    const char* field;
  } bad[] = {
      {"  live_target: {refused: refused, reached: [blocked], target: target}\n", 45,
       "classify.live_target.reached"},  // a declared containment is no reach
      {"  live_target: {refused: nope, reached: [reached], target: target}\n", 26,
       "classify.live_target.refused"},
      {"  live_target: {refused: refused, reached: [], target: target}\n", 16,
       "classify.live_target"},
      {"  live_target: {refused: refused, reached: [reached]}\n", 16, "classify.live_target"},
      {"  live_target: {refused: refused, reached: [reached], target: t, x: 1}\n", 66,
       "classify.live_target.x"},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.rule);
    auto p = LoadProbe(write("live-bad", b.rule));
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().line, 7) << p.error().ToString();
    EXPECT_EQ(p.error().column, b.column) << p.error().ToString();
    EXPECT_EQ(p.error().field, b.field) << p.error().ToString();
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
  for (const auto& f : std::filesystem::directory_iterator(root / "suites")) {
    auto suite = LoadSuite(f.path());
    ASSERT_TRUE(suite) << suite.error().ToString();
    EXPECT_TRUE(CheckSuiteEntries(*suite, *probes)) << f.path();
  }
  auto repl = LoadSuite(root / "suites/repl-acceptance.yaml");
  ASSERT_TRUE(repl) << repl.error().ToString();
  EXPECT_EQ(repl->criteria.size(), 4u);
}

TEST(DidYouMeanTest, Table) {
  const std::vector<std::string> docker = {"image", "env", "hostConfig", "user", "cmd"};
  struct Case {
    const char* key;
    const char* want;
  };
  const Case cases[] = {
      {"hostconfig", "hostConfig"},  // case only
      {"envv", "env"},               // one insertion
      {"imgae", "image"},            // a transposition: two edits in five letters
      {"HostConfg", "hostConfig"},   // case and a deletion
      {"network", ""},               // another word: no suggestion
      {"x", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(internal::DidYouMean(c.key, docker), c.want) << c.key;
}

// Raw bytes that are not UTF-8 passed yaml-cpp and made nlohmann's dump() throw mid-run
// (`sandprobe run` aborted with json type_error 316); they are an error at their place.
TEST(FuzzRegressionTest, TextThatIsNotUtf8IsAnErrorAtItsPlace) {
  const std::string suite =
      "name: u8\ndescription: fine\nprobes:\n  - id: cred.sa-token\n"
      "    params: {canary_path: \"/x\xfey\"}\n";
  auto s = ParseSuite(suite, "s.yaml");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().line, 5) << s.error().ToString();
  EXPECT_NE(s.error().message.find("not valid UTF-8"), std::string::npos) << s.error().ToString();
  auto key = ParseSuite("name: u8\ndescription: d\nprobes: []\n\xc3: 1\n", "s.yaml");
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().line, 4) << key.error().ToString();
  EXPECT_TRUE(
      ParseSuite("name: u8 \xc3\xa9\ndescription: d\nprobes:\n  - id: cred.sa-token\n", "s.yaml"))
      << "valid UTF-8 still loads";
}

// calls: read as int, 4294967297 was 1 and passed the 1..32 check.
TEST(FuzzRegressionTest, CallsOutOfRangeIsAnErrorWhateverItsWidth) {
  const std::string head =
      "id: priv.capabilities\nlabel: caps\ncategory: priv\ndescription: d\n"
      "classify: {outcomes: {a: exposed}}\n";
  for (const char* calls : {"4294967297", "-4294967295", "18446744073709551615", "33", "0"}) {
    auto p = ParseProbe(head + "calls: " + calls + "\n", "probe.yaml");
    ASSERT_FALSE(p) << calls;
    EXPECT_NE(p.error().message.find("expected a whole number from 1 to 32"), std::string::npos)
        << p.error().ToString();
  }
  auto ok = ParseProbe(head + "calls: 32\n", "probe.yaml");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->calls, 32);
}

}  // namespace
}  // namespace sandprobe::config

// Defects the libFuzzer targets found (harness/fuzz, docs/design.md "Fuzzing"), pinned here so
// they stay fixed in builds without clang.
namespace sandprobe::config {
namespace {

// The manifest target's timeout: yaml-cpp 0.7's LoadAll looped forever, allocating, on a stray
// ',' where a document starts. Each case must return (an error at the comma), not hang.
TEST(FuzzRegressionTest, StrayCommaIsASyntaxErrorNotAHang) {
  const struct {
    std::string text;
    int line;
    const char* message_part;
  } cases[] = {
      {",", 1, "unexpected character"},
      {", x: 1\n", 1, "unexpected character"},
      {"name: docker-open\ndriver: docker\n...\n,\n", 4, "unexpected character"},
      {"[a, b]\n, c\n", 2, "unexpected character"},
      {"a: 1\n---\nb: 2\n", 3, "2 YAML documents"},
  };
  const DriverSection kinds[] = {{"docker", nullptr}};
  for (const auto& c : cases) {
    auto m = ParseManifest(c.text, "m.yaml", kinds);
    ASSERT_FALSE(m) << c.text;
    EXPECT_EQ(m.error().file, "m.yaml");
    EXPECT_EQ(m.error().line, c.line) << m.error().ToString();
    EXPECT_NE(m.error().message.find(c.message_part), std::string::npos) << m.error().ToString();
    EXPECT_FALSE(ParseSuite(c.text, "s.yaml"));
  }
  // The one-document files still load.
  auto ok = ParseManifest("name: a\ndriver: docker\n", "m.yaml", kinds);
  EXPECT_TRUE(ok) << ok.error().ToString();
}

// The probe target's crash: a probe.yaml without classify: threw yaml-cpp's InvalidNode out of
// the loader (std::terminate); lookups of absent keys under classify did the same.
TEST(FuzzRegressionTest, ProbeWithoutClassifyIsAnError) {
  const std::string head = "id: priv.capabilities\nlabel: caps\ncategory: priv\ndescription: d\n";
  auto missing = ParseProbe(head, "probe.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().ToString(), "probe.yaml: classify: required mapping is missing");
  for (const char* classify : {
           "classify: {outcomes: {a: exposed}, exceeds: {param: x}}\n",
           "classify: {outcomes: {a: exposed}, output: 3}\n",
           "classify: {outcomes: {a: exposed}, quiet_after_call: {exposure: exposed}}\n",
       }) {
    auto p = ParseProbe(head + classify, "probe.yaml");
    ASSERT_FALSE(p) << classify;
    EXPECT_EQ(p.error().file, "probe.yaml") << classify;
  }
}

}  // namespace
}  // namespace sandprobe::config
