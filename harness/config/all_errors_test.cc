// One pass, every mistake (`sandprobe validate`): a file's independent mistakes are all in the
// error (ConfigError::more), each at its own line, column and field, in the order found; a single
// mistake stays one error with the text it always had; a file that is not YAML is one parse error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "config/config.h"
#include "config/manifest_sections.h"

namespace sandprobe::config {
namespace {

struct Want {
  int line;
  int column;
  const char* field;
  const char* message_part;
};

struct Case {
  const char* kind;  // manifest, suite, expectations or probe
  const char* text;
  std::vector<Want> errors;  // in the order found
};

std::optional<ConfigError> Load(const std::string& kind, const std::string& text) {
  static const DriverSection kKinds[] = {{"plain", nullptr}};
  const auto error = [](const auto& loaded) -> std::optional<ConfigError> {
    if (loaded) return std::nullopt;
    return loaded.error();
  };
  if (kind == "manifest") return error(ParseManifest(text, "f.yaml", kKinds));
  if (kind == "suite") return error(ParseSuite(text, "f.yaml"));
  if (kind == "expectations") return error(ParseExpectations(text, "f.yaml"));
  return error(ParseProbe(text, "f.yaml"));
}

void ExpectErrors(const ConfigError& error, const std::vector<Want>& want) {
  const std::vector<ConfigError> all = error.All();
  std::string got;
  for (const ConfigError& e : all) got += e.ToString() + "\n";
  ASSERT_EQ(all.size(), want.size()) << got;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(all[i].file, error.file) << got;
    EXPECT_EQ(all[i].line, want[i].line) << got;
    EXPECT_EQ(all[i].column, want[i].column) << got;
    EXPECT_EQ(all[i].field, want[i].field) << got;
    EXPECT_NE(all[i].message.find(want[i].message_part), std::string::npos) << got;
  }
}

const Case kCases[] = {
    // Manifests: each common field on its own.
    {"manifest",
     "name: m\ndriver: plain\nlimits:\n  timout: 5s\n  memory: lots\nweakens: 3\n",
     {{4, 3, "limits.timout", "did you mean timeout?"},
      {5, 11, "limits.memory", ""},
      {6, 10, "weakens", "expected a list of strings"}}},
    {"manifest",
     "name: Bad Name\ndriver: plain\ncontrl: x\n",
     {{3, 1, "contrl", "did you mean control?"}, {1, 7, "name", "expected 1-64 characters"}}},
    // An unknown driver hides only its own section: the other fields are still checked.
    {"manifest",
     "name: m\ndriver: plian\nlimits: {pids: 6.5}\n",
     {{2, 9, "driver", "unknown driver 'plian'"}, {3, 16, "limits.pids", "whole number"}}},
    // A typo of a required key is one mistake, not a second "required field is missing".
    {"manifest", "nmae: m\ndriver: plain\n", {{1, 1, "nmae", "did you mean name?"}}},
    // Suites: each entry on its own.
    {"suite",
     "name: s\nprobes:\n  - id: net.dns\n    parms: {server: x}\n  - net.tcp\n"
     "  - id: net.udp\n    levl: advisory\n",
     {{4, 5, "probes[0].parms", "did you mean params?"},
      {7, 5, "probes[2].levl", "did you mean level?"}}},
    {"suite",
     "name: s\nprobes:\n  - [net.dns]\n  - net.tcp\ncriteria:\n  - name: c\n"
     "    probes: [net.tpc]\n",
     {{3, 5, "probes[0]", "expected a probe id or a mapping with id:"},
      {7, 14, "criteria[0].probes[0]", "did you mean net.tcp?"}}},
    // An entry without id: an error of its own, never a crash (a const node's missing key).
    {"suite",
     "name: s\nprobes:\n  - i: net.dns\n  - {}\n",
     {{3, 5, "probes[0].i", "did you mean id?"}, {4, 5, "probes[1].id", "required field"}}},
    // Expectations: each entry on its own.
    {"expectations",
     "expectations:\n  - {probe: a, reason: r, expires: 31.12.2026}\n"
     "  - {probe: b, reason: '', expires: 2026-01-01}\n",
     {{2, 36, "expectations[0].expires", "expected a date YYYY-MM-DD"},
      {3, 24, "expectations[1].reason", "must not be empty"}}},
    // Probe descriptors: each top-level field on its own.
    {"probe",
     "id: net.x\nlabel: x\ncategory: net\ndescription: d\nrequires_control: maybe\ncalls: 99\n"
     "classify:\n  outcomes: {ok: exposed}\n",
     {{5, 19, "requires_control", "expected true or false"},
      {6, 8, "calls", "expected a whole number from 1 to 32"}}},
    // Not YAML: the one parse error, nothing after it.
    {"manifest", "name: m\ndriver: plain\n  bad: [\n", {{3, 6, "", "YAML syntax"}}},
    {"suite", "name: s\nprobes: [net.dns\n", {{3, 1, "", "YAML syntax"}}},
};

TEST(AllErrorsTest, EveryIndependentMistakeIsReportedAtItsPlace) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.text);
    const std::optional<ConfigError> error = Load(c.kind, c.text);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->file, "f.yaml");
    ExpectErrors(*error, c.errors);
  }
}

// One mistake: one error, its text exactly as before, and `run`'s summary is that text.
TEST(AllErrorsTest, ASingleMistakeIsOneErrorWithItsUsualText) {
  const struct {
    const char* kind;
    const char* text;
    const char* error;
  } cases[] = {
      {"manifest", "name: m\ndriver: plain\nlimits: {timout: 5s}\n",
       "f.yaml:3:10: limits.timout: unknown field; did you mean timeout?"},
      {"suite", "name: s\nprobes:\n  - id: net.dns\n    levl: advisory\n",
       "f.yaml:4:5: probes[0].levl: unknown field; did you mean level?"},
      {"expectations", "expectations:\n  - {probe: a, reason: r, expires: 2026-02-29}\n",
       "f.yaml:2:36: expectations[0].expires: expected a date YYYY-MM-DD (the last day the "
       "acceptance holds, UTC)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const std::optional<ConfigError> error = Load(c.kind, c.text);
    ASSERT_TRUE(error);
    EXPECT_TRUE(error->more.empty()) << error->more.front().ToString();
    EXPECT_EQ(error->ToString(), c.error);
    EXPECT_EQ(error->Summary(), c.error);
  }
  // More than one: `run` names the first and says how many more `validate` lists.
  const std::optional<ConfigError> two = Load("manifest", kCases[0].text);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->Summary(), two->ToString() +
                                " (and 2 more mistakes in this file: `sandprobe validate f.yaml` "
                                "lists each)");
}

// Against the probe tree: every unknown id and parameter name, and in one pass with LoadSuite,
// the entries that read are checked even when another entry does not.
TEST(AllErrorsTest, SuiteEntriesAgainstTheTree) {
  core::ProbeDescriptor dns;
  dns.id = "net.dns";
  dns.params["server"] = core::ParamSpec{};
  const std::vector<core::ProbeDescriptor> tree = {dns};
  auto suite = ParseSuite(
      "name: s\nprobes:\n  - net.dnss\n  - id: net.dns\n    params: {sever: x}\n", "s.yaml");
  ASSERT_TRUE(suite) << suite.error().ToString();
  auto checked = CheckSuiteEntries(*suite, tree);
  ASSERT_FALSE(checked);
  ExpectErrors(checked.error(), {{3, 5, "probes[0].id", "did you mean net.dns?"},
                                 {5, 14, "probes[1].params.sever", "did you mean server?"}});

  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "sandprobe-all-errors-suite.yaml";
  std::ofstream(file) << "name: s\nprobes:\n  - id: net.dns\n    levl: advisory\n  - net.dnss\n";
  auto loaded = LoadSuite(file, tree);
  std::filesystem::remove(file);
  ASSERT_FALSE(loaded);
  ExpectErrors(loaded.error(), {{4, 5, "probes[0].levl", "did you mean level?"},
                                {5, 5, "probes[1].id", "did you mean net.dns?"}});
}

}  // namespace
}  // namespace sandprobe::config
