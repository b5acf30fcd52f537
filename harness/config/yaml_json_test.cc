// The one YAML -> JSON conversion, table-tested: what each scalar becomes, and which documents
// are errors.
#include "config/yaml_json.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace sandprobe::config {
namespace {

using Json = nlohmann::json;

TEST(YamlToJsonTest, ScalarsFollowTheCoreSchema) {
  const struct {
    std::string yaml;  // the value of `v:`
    Json want;
  } cases[] = {
      {"", nullptr},
      {"~", nullptr},
      {"null", nullptr},
      {"Null", nullptr},
      {"NULL", nullptr},
      {"nul", "nul"},
      {"true", true},
      {"True", true},
      {"TRUE", true},
      {"false", false},
      {"FALSE", false},
      {"yes", "yes"},  // YAML 1.1 booleans are strings in 1.2
      {"no", "no"},
      {"on", "on"},
      {"off", "off"},
      {"y", "y"},
      {"0", 0},
      {"10", 10},
      {"-7", -7},
      {"+5", 5},
      {"-0", 0},
      {"0644", 644},  // decimal in the YAML 1.2 core schema (YAML 1.1 readers say octal 420)
      {"-007", -7},
      {std::string(100000, '1'), std::string(100000, '1')},          // too big: a string, no crash
      {std::string(300, '1') + ".5", std::string(300, '1') + ".5"},  // too long for a float
      {"-012", -12},
      {"0o17", 15},
      {"0x1F", 31},
      {"0o9", "0o9"},
      {"9223372036854775807", INT64_MAX},
      {"-9223372036854775808", INT64_MIN},
      {"18446744073709551615", UINT64_MAX},
      {"18446744073709551616", "18446744073709551616"},  // exact digits, never rounded
      {"-9223372036854775809", "-9223372036854775809"},
      {"1.5", 1.5},
      {"-1.5", -1.5},
      {".5", 0.5},
      {"+.5", 0.5},
      {"1.", 1.0},
      {"1e3", 1000.0},
      {"2.5E-1", 0.25},
      {"1e400", "1e400"},  // overflows a double
      {".inf", ".inf"},    // no JSON value
      {"-.Inf", "-.Inf"},
      {".nan", ".nan"},
      {"1_000", "1_000"},
      {"12:30", "12:30"},
      {"10s", "10s"},
      {"'10'", "10"},  // quoted: strings whatever they hold
      {"\"true\"", "true"},
      {"''", ""},
      {"\"~\"", "~"},
      {"!!str 5", "5"},
  };
  for (const auto& c : cases) {
    const std::string text = std::string("v: ") + c.yaml + "\n";
    auto got = YamlToJson(text, "t.yaml");
    ASSERT_TRUE(got) << text << got.error().ToString();
    EXPECT_EQ((*got)["v"], c.want)
        << "v: " << c.yaml.substr(0, 80) << " -> " << (*got)["v"].dump().substr(0, 80);
    EXPECT_EQ((*got)["v"].type(), c.want.type()) << "v: " << c.yaml.substr(0, 80);
  }
}

TEST(YamlToJsonTest, StructureAndErrors) {
  auto ok = YamlToJson("a: [1, x, {b: ~}]\nc: {}\nd: []\n'<<': literal\n", "t.yaml");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(*ok, Json::parse(R"({"a":[1,"x",{"b":null}],"c":{},"d":[],"<<":"literal"})"));
  const struct {
    const char* text;
    const char* message_part;
    int line;
  } bad[] = {
      {"a: 1\na: 2\n", "duplicate key", 2},
      {"base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n", "merge keys are not supported", 3},
      {"? [a, b]\n: 1\n", "mapping key must be a plain value", 1},
      {"a: [\n", "YAML syntax", 0},
      {"- 1\n- 2\n", "expected a YAML mapping", 1},
      {"a: 1\n---\nb: 2\n", "2 YAML documents", 0},
  };
  for (const auto& c : bad) {
    auto r = YamlToJson(c.text, "t.yaml");
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message.find(c.message_part), std::string::npos) << r.error().ToString();
    EXPECT_EQ(r.error().file, "t.yaml");
    if (c.line > 0) {
      EXPECT_EQ(r.error().line, c.line) << r.error().ToString();
    }
  }
}

}  // namespace
}  // namespace sandprobe::config
