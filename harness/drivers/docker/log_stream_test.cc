// Docker's multiplexed log stream split at every possible chunk boundary.
#include "drivers/docker/log_stream.h"

#include <gtest/gtest.h>

namespace sandprobe::drivers {
namespace {

std::string Frame(int stream, std::string_view payload) {
  std::string f(8, '\0');
  f[0] = static_cast<char>(stream);
  const uint32_t n = payload.size();
  f[4] = char(n >> 24), f[5] = char(n >> 16), f[6] = char(n >> 8), f[7] = char(n);
  return f + std::string(payload);
}

TEST(LogDemuxerTest, SplitsStreamsAtAnyChunkBoundary) {
  const std::string wire = Frame(1, "@@sandprobe x {}\n") + Frame(2, "warn\n") + Frame(1, "") +
                           Frame(1, std::string(70000, 'a'));
  for (size_t chunk : {1ul, 3ul, 7ul, 8ul, 9ul, 4096ul, wire.size()}) {
    std::string out, err;
    LogDemuxer d([&](int s, std::string_view b) { (s == 2 ? err : out).append(b); });
    for (size_t i = 0; i < wire.size(); i += chunk) d.Feed(std::string_view(wire).substr(i, chunk));
    EXPECT_EQ(out, "@@sandprobe x {}\n" + std::string(70000, 'a')) << chunk;
    EXPECT_EQ(err, "warn\n") << chunk;
    EXPECT_FALSE(d.Partial());
  }
}

TEST(LogDemuxerTest, TruncatedStreamIsPartial) {
  std::string out;
  LogDemuxer d([&](int, std::string_view b) { out.append(b); });
  d.Feed(Frame(1, "hello").substr(0, 10));
  EXPECT_EQ(out, "he");
  EXPECT_TRUE(d.Partial());
}

}  // namespace
}  // namespace sandprobe::drivers
