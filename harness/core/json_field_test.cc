// Safe reads from untrusted JSON (json_field.h): a field of the wrong type reads as absent.
#include "core/json_field.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

TEST(JsonFieldTest, AFieldOfTheWrongTypeReadsAsAbsent) {
  const nlohmann::json j = {{"s", "x"}, {"b", true},    {"i", 1796640079289},
                            {"f", 1.5}, {"n", nullptr}, {"neg", -3}};
  EXPECT_EQ(StringField(j, "s"), "x");
  EXPECT_EQ(StringField(j, "i"), "");
  EXPECT_TRUE(BoolField(j, "b"));
  EXPECT_TRUE(BoolField(j, "s", true));  // the fallback
  EXPECT_EQ(IntField(j, "i"), 1796640079289);
  EXPECT_EQ(IntField(j, "neg"), -3);
  for (const char* key : {"s", "b", "f", "n", "absent"}) EXPECT_EQ(IntField(j, key, 7), 7) << key;
  EXPECT_EQ(IntField(nlohmann::json::array({1}), "i"), 0);  // not an object
}

}  // namespace
}  // namespace sandprobe::core
