// Hostile output cannot forge evidence: records need the marker and this run's nonce.
#include "core/output.h"

#include <gtest/gtest.h>

namespace sandprobe::core {
namespace {

constexpr char kNonce[] = "0123456789abcdef";

TEST(OutputTest, ParseRecordLineTable) {
  const struct {
    std::string line;
    bool want;
  } cases[] = {
      {R"(@@sandprobe 0123456789abcdef {"kind":"result","outcome":"blocked"})", true},
      {"@@sandprobe 0123456789abcdef {\"kind\":\"start\"}\r", true},
      {R"(@@sandprobe ffffffffffffffff {"kind":"result","outcome":"blocked"})", false},
      {R"(@@sandprobe 0123456789abcdef0 {"kind":"result"})", false},
      {R"(@@sandprobe  0123456789abcdef {"kind":"result"})", false},
      {R"(@@sandprobe 0123456789abcdef ["kind","result"])", false},
      {R"(@@sandprobe 0123456789abcdef {"kind":7})", false},
      {R"(@@sandprobe 0123456789abcdef {"kind":"result")", false},
      {"@@sandprobe 0123456789abcdef {\"kind\":\"result\",\"x\":\"\xff\"}", false},
      {R"(x @@sandprobe 0123456789abcdef {"kind":"result"})", false},
      {R"(200 OK reached)", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ParseRecordLine(c.line, kNonce).has_value(), c.want) << c.line;
  }
  EXPECT_FALSE(ParseRecordLine(R"(@@sandprobe  {"kind":"result"})", ""));
}

TEST(OutputTest, SanitizeUtf8Table) {
  EXPECT_EQ(SanitizeUtf8("plain"), "plain");
  EXPECT_EQ(SanitizeUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(SanitizeUtf8("\xff"), "\xEF\xBF\xBD");
  EXPECT_EQ(SanitizeUtf8("a\xC3"), "a\xEF\xBF\xBD");                                // truncated
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(SanitizeUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(OutputTest, CollectsRecordsAcrossChunkBoundaries) {
  OutputCollector c(kNonce);
  c.FeedStdout("noise\n@@sandprobe 0123456789ab");
  c.FeedStdout("cdef {\"kind\":\"start\"}\n@@sandprobe 0123456789abcdef {\"kind\":\"res");
  c.FeedStdout("ult\",\"outcome\":\"blocked\"}");  // no final newline: flushed by Finish
  Observation o;
  c.Finish(o);
  ASSERT_EQ(o.records.size(), 2u);
  ASSERT_TRUE(o.result);
  EXPECT_EQ((*o.result)["outcome"], "blocked");
}

TEST(OutputTest, ForgedAndOversizedLinesAreNotEvidence) {
  OutputCollector c(kNonce, OutputBounds{.head_bytes = 1024, .max_line = 256, .max_records = 3});
  c.FeedStdout("@@sandprobe deadbeefdeadbeef {\"kind\":\"result\",\"outcome\":\"blocked\"}\n");
  std::string big =
      "@@sandprobe 0123456789abcdef {\"kind\":\"result\",\"outcome\":\"blocked\",\"p\":\"";
  big += std::string(1000, 'x') + "\"}\n";
  c.FeedStdout(big);
  for (int i = 0; i < 10; ++i)
    c.FeedStdout("@@sandprobe 0123456789abcdef {\"kind\":\"progress\"}\n");
  c.FeedStdout("@@sandprobe 0123456789abcdef {\"kind\":\"result\",\"outcome\":\"reached\"}\n");
  c.FeedStdout("@@sandprobe 0123456789abcdef {\"kind\":\"result\",\"outcome\":\"blocked\"}\n");
  Observation o;
  c.Finish(o);
  EXPECT_EQ(o.foreign_lines, 1u);
  EXPECT_EQ(o.records.size(), 3u);
  EXPECT_EQ(o.dropped_records, 9u);
  ASSERT_TRUE(o.result);  // the result is kept even past the record bound; the first one wins
  EXPECT_EQ((*o.result)["outcome"], "reached");
  EXPECT_LE(o.stdout_head.size(), 1024u);
}

TEST(OutputTest, TenMegabytesAreCountedButBounded) {
  OutputCollector c(kNonce);
  const std::string chunk(64 * 1024, '\xff');
  for (int i = 0; i < 160; ++i) c.FeedStdout(chunk);
  c.FeedStdout("\n@@sandprobe 0123456789abcdef {\"kind\":\"result\",\"outcome\":\"x\"}\n");
  c.FeedStderr(std::string(3 << 20, 'e'));
  Observation o;
  c.Finish(o);
  EXPECT_GT(o.stdout_bytes, 10u << 20);
  EXPECT_LE(o.stdout_head.size(), 3u * 64 * 1024);  // replacement chars are 3 bytes each
  EXPECT_EQ(o.stderr_bytes, 3u << 20);
  EXPECT_TRUE(o.result);
}

}  // namespace
}  // namespace sandprobe::core
