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

// Claims (limits.noexec, limits.seccomp) travel as they are; no claim keeps the default, and a
// probe that judges a claim is then reported, not judged.
TEST(ParamsTest, ClaimsTable) {
  ProbeDescriptor p;
  p.id = "fs.write-exec";
  p.params["claimed_noexec"].default_value = false;
  p.params["claimed_noexec"].from_limit = "noexec";
  p.params["claimed_seccomp"].default_value = "";
  p.params["claimed_seccomp"].from_limit = "seccomp";
  p.claim = "claimed_noexec";
  Limits every;
  every.noexec = NoexecClaim{.every_writable = true, .paths = {}};
  every.seccomp = SeccompClaim::kDefault;
  Limits listed;
  listed.noexec = NoexecClaim{.every_writable = false, .paths = {"/tmp", "/dev/shm"}};
  Limits none;
  none.memory_bytes = 1 << 20;  // a size is no claim
  const struct {
    const Limits* limits;
    nlohmann::json overrides;
    nlohmann::json noexec;
    nlohmann::json seccomp;
    const char* unclaimed;
  } cases[] = {
      {&every, nlohmann::json::object(), true, "default", ""},
      {&listed, nlohmann::json::object(), {"/tmp", "/dev/shm"}, "", ""},
      {&none, nlohmann::json::object(), false, "", "the candidate claims no limits.noexec"},
      {&none, {{"claimed_noexec", true}}, true, "", ""},  // a suite may claim it too
      {&every,
       {{"claimed_noexec", false}},
       false,
       "default",  // and take it back
       "the candidate claims no limits.noexec"},
  };
  for (const auto& c : cases) {
    auto r = ResolveParams(p, c.overrides, *c.limits, {});
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ((*r)["claimed_noexec"], c.noexec) << r->dump();
    EXPECT_EQ((*r)["claimed_seccomp"], c.seccomp) << r->dump();
    EXPECT_EQ(UnclaimedReason(p, *r), c.unclaimed) << r->dump();
  }
  EXPECT_TRUE(IsClaimLimit("noexec") && IsClaimLimit("seccomp") && !IsClaimLimit("memory"));
  EXPECT_FALSE(ClaimValue(none, "noexec"));
  EXPECT_EQ(*ClaimValue(every, "seccomp"), "default");
  // A list override of a boolean claim is refused like any other type change.
  EXPECT_FALSE(ResolveParams(p, {{"claimed_noexec", {"/tmp"}}}, none, {}));
  // Empty values, a missing parameter and other types are no claim.
  p.claim = "claimed_seccomp";
  for (const nlohmann::json& params :
       {nlohmann::json{{"claimed_seccomp", ""}}, nlohmann::json{{"claimed_seccomp", nullptr}},
        nlohmann::json{{"claimed_seccomp", 0}}, nlohmann::json{{"claimed_seccomp", {}}},
        nlohmann::json::object(), nlohmann::json()}) {
    EXPECT_EQ(UnclaimedReason(p, params), "the candidate claims no limits.seccomp") << params;
  }
  EXPECT_EQ(UnclaimedReason(p, {{"claimed_seccomp", "default"}}), "");
  p.claim = "";  // a probe that judges no claim is always judged
  EXPECT_EQ(UnclaimedReason(p, nlohmann::json::object()), "");
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
