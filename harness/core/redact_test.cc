#include "core/redact.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

TEST(RedactTest, EveryPlaceAnObservationCarriesText) {
  const std::string secret = "spk_0123456789abcdef";
  Observation o;
  o.stdout_head = "env: X=" + secret + "\nagain " + secret;
  o.stderr_head = secret;
  o.harness_error = "boom " + secret;
  o.records.push_back({{"kind", "result"},
                       {"detail", "value " + secret},
                       {secret, 1},
                       {"nested", {{"list", {secret, "ok"}}}}});
  o.result = o.records.back();
  const size_t n = RedactSecrets(o, {secret, "short"});
  EXPECT_EQ(n, 10u);  // stdout 2, stderr 1, error 1, record 3 (value, key, list), result 3
  for (const std::string& s :
       {o.stdout_head, o.stderr_head, o.harness_error, o.records[0].dump(), o.result->dump()}) {
    EXPECT_EQ(s.find(secret), std::string::npos) << s;
  }
  EXPECT_NE(o.stdout_head.find(kRedacted), std::string::npos);
  EXPECT_EQ(o.records[0]["nested"]["list"][1], "ok");
}

TEST(RedactTest, ShortOrEmptySecretsAreIgnored) {
  Observation o;
  o.stdout_head = "abc";
  EXPECT_EQ(RedactSecrets(o, {"", "abc"}), 0u);
  EXPECT_EQ(o.stdout_head, "abc");
}

}  // namespace
}  // namespace sandprobe::core
