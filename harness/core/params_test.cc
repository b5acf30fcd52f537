#include "core/params.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

ProbeDescriptor Balloon() {
  ProbeDescriptor p;
  p.id = "res.memory-balloon";
  p.params["target_mib"] = ParamSpec{512, "", "memory", 2.0, "MiB"};
  p.params["step_mib"] = ParamSpec{16, "", "", 1.0, ""};
  p.params["target"] = ParamSpec{"127.0.0.1:80", "", "", 1.0, ""};
  p.script = "print('body')\n";
  return p;
}

TEST(ParamsTest, DefaultsLimitsOverridesPlaceholders) {
  Limits none, mem;
  mem.memory_bytes = 256ull << 20;
  const std::map<std::string, std::string> subs = {{"canary.tcp", "127.0.0.1:4242"}};
  auto a = ResolveParams(Balloon(), nlohmann::json::object(), none, subs).value();
  EXPECT_EQ(a["target_mib"], 512);
  auto b = ResolveParams(Balloon(), nlohmann::json::object(), mem, subs).value();
  EXPECT_EQ(b["target_mib"], 512);  // 2 x 256 MiB
  mem.memory_bytes = 100ull << 20;
  EXPECT_EQ(ResolveParams(Balloon(), {}, mem, subs).value()["target_mib"], 200);
  auto c = ResolveParams(Balloon(), {{"target", "{canary.tcp}"}, {"step_mib", 8}}, none, subs);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ((*c)["target"], "127.0.0.1:4242");
  EXPECT_EQ((*c)["step_mib"], 8);
}

TEST(ParamsTest, Errors) {
  auto unknown = ResolveParams(Balloon(), {{"nope", 1}}, {}, {});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("nope"), std::string::npos);
  auto type = ResolveParams(Balloon(), {{"target_mib", "lots"}}, {}, {});
  ASSERT_FALSE(type);
  EXPECT_NE(type.error().find("must be a number"), std::string::npos) << type.error();
  auto negative = ResolveParams(Balloon(), {{"target_mib", -1}}, {}, {});
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().find("negative"), std::string::npos);
  auto placeholder = ResolveParams(Balloon(), {{"target", "{canary.nope}"}}, {}, {});
  ASSERT_FALSE(placeholder);
  EXPECT_NE(placeholder.error().find("canary.nope"), std::string::npos);
}

TEST(ParamsTest, KeyIsCanonical) {
  nlohmann::json a = {{"b", 1}, {"a", 2}}, b = {{"a", 2}, {"b", 1}};
  EXPECT_EQ(ParamsKey(a), ParamsKey(b));
  EXPECT_NE(ParamsKey(a), ParamsKey({{"a", 2}, {"b", 2}}));
}

TEST(ParamsTest, Base64) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
}

TEST(ParamsTest, ScriptCarriesParamsAndIsCapped) {
  auto s = BuildScript(Balloon(), "PREAMBLE = 1", {{"x", 1}}, "abc", "i1");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->starts_with("# sandprobe probe res.memory-balloon\n_SANDPROBE = \""));
  EXPECT_NE(s->find("PREAMBLE = 1\nprint('body')"), std::string::npos);
  ProbeDescriptor big = Balloon();
  big.script = std::string(70 * 1024, '#');
  auto r = BuildScript(big, "", {}, "abc", "i1");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("64"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace sandprobe::core
