#include "drivers/docker/oom_events.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace sandprobe::drivers {
namespace {

constexpr char kId[] = "947fedf7a2a464e8bb21b3af1e5d3d0ce54fd7bc91dd4c1a6fc8c44ad7f2e47f";

// Shaped as docker 20.10 answered GET /events on this machine (a balloon in a 64m container).
std::string Event(std::string_view action, std::string_view id) {
  return fmt::format(R"({{"status":"{0}","id":"{1}","from":"sandprobe-probe:local","Type":)"
                     R"("container","Action":"{0}","Actor":{{"ID":"{1}","Attributes":{{}}}},)"
                     R"("scope":"local","time":1796069739,"timeNano":1796069739767339864}})",
                     action, id);
}

TEST(OomEvents, AnOomEventOfTheContainerCounts) {
  EXPECT_TRUE(HasOomEvent(Event("oom", kId) + "\n" + Event("die", kId) + "\n", kId));
  EXPECT_TRUE(HasOomEvent(Event("die", kId) + "\n" + Event("oom", kId), kId));  // late TaskOOM
}

TEST(OomEvents, NoOomEventIsNoOom) {
  EXPECT_FALSE(HasOomEvent("", kId));
  EXPECT_FALSE(HasOomEvent(Event("die", kId) + "\n" + Event("kill", kId) + "\n", kId));
  EXPECT_FALSE(HasOomEvent(Event("oom", "d6f48b64ec6d2abcd59b7237a7f8595") + "\n", kId));
  EXPECT_FALSE(HasOomEvent("not json\n{\"Action\":\"oom\"}\n", kId));  // no actor: not ours
  EXPECT_FALSE(HasOomEvent(Event("oom", kId), ""));
}

TEST(OomEvents, OldAnswerShapeAndShortIds) {
  EXPECT_TRUE(HasOomEvent(R"({"status":"oom","id":"947fedf7a2a4"})", kId));
  EXPECT_TRUE(HasOomEvent(Event("oom", kId), "947fedf7a2a4"));
}

TEST(OomEvents, QueryIsFiniteAndFiltered) {
  const std::string q = OomEventsQuery("abc", 100.5, 102.25);
  EXPECT_TRUE(q.starts_with("/events?since=100.500&until=102.250&filters=")) << q;
  EXPECT_NE(q.find("oom"), std::string::npos) << q;
  EXPECT_NE(q.find("abc"), std::string::npos) << q;
  EXPECT_EQ(q.find('{'), std::string::npos) << q;  // the JSON is percent-encoded
}

}  // namespace
}  // namespace sandprobe::drivers
