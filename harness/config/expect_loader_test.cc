// Expectations files: every entry checked, every error at file:line:col with the field.
#include <gtest/gtest.h>

#include "config/config.h"

namespace sandprobe::config {
namespace {

TEST(ExpectationsTest, Parses) {
  auto e = ParseExpectations(R"(description: known FAILs
expectations:
  - probe: net.dns
    candidate: bubblewrap
    reason: "resolver proxy, ticket 41"
    expires: 2026-12-31
  - {probe: net.udp, reason: r, expires: "2027-01-01"}
)",
                             "x.yaml");
  ASSERT_TRUE(e) << e.error().ToString();
  ASSERT_EQ(e->size(), 2u);
  EXPECT_EQ((*e)[0].probe, "net.dns");
  EXPECT_EQ((*e)[0].candidate, "bubblewrap");
  EXPECT_EQ((*e)[0].reason, "resolver proxy, ticket 41");
  EXPECT_EQ((*e)[0].expires, "2026-12-31");
  EXPECT_EQ((*e)[0].source, "x.yaml:3:5");
  EXPECT_EQ((*e)[1].candidate, "");
  EXPECT_EQ((*e)[1].source, "x.yaml:7:5");
  auto empty = ParseExpectations("expectations: []\n", "x.yaml");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(ExpectationsTest, ErrorsAtTheirLineAndColumn) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"expectation: []\n", "x.yaml:1:1: expectation: unknown field; did you mean expectations?"},
      {"description: d\n", "x.yaml:1:1: expectations: expected a list of expectations"},
      {"expectations: {probe: x}\n", "x.yaml:1:15: expectations: expected a list of expectations"},
      {"expectations:\n  - net.dns\n", "x.yaml:2:5: expectations[0]: expected a mapping"},
      {"expectations:\n  - {probe: a, reason: r, expires: 2026-01-01, expiry: 2026-01-02}\n",
       "x.yaml:2:48: expectations[0].expiry: unknown field"},
      {"expectations:\n  - {reason: r, expires: 2026-01-01}\n",
       "x.yaml:2:5: expectations[0].probe: required field is missing"},
      {"expectations:\n  - {probe: a, reason: '', expires: 2026-01-01}\n",
       "x.yaml:2:24: expectations[0].reason: must not be empty"},
      {"expectations:\n  - {probe: a, reason: r, expires: 31.12.2026}\n",
       "x.yaml:2:36: expectations[0].expires: expected a date YYYY-MM-DD"},
      {"expectations:\n  - {probe: a, reason: r, expires: 2026-02-29}\n",
       "x.yaml:2:36: expectations[0].expires: expected a date YYYY-MM-DD"},
      {"expectations:\n  - {probe: a, reason: r, expires: [2026]}\n",
       "x.yaml:2:36: expectations[0].expires: expected a string"},
      {"expectations:\n  - {probe: a, reason: r, expires: 2026-01-01}\n"
       "  - {probe: a, reason: s, expires: 2027-01-01}\n",
       "x.yaml:3:5: expectations[1]: a is already accepted at x.yaml:2:5"},
      {"expectations: [\n", "x.yaml:"},
  };
  for (const Case& c : cases) {
    auto e = ParseExpectations(c.text, "x.yaml");
    ASSERT_FALSE(e) << c.text;
    EXPECT_TRUE(e.error().ToString().starts_with(c.error))
        << c.text << "\n got: " << e.error().ToString();
  }
}

}  // namespace
}  // namespace sandprobe::config
