// The unix socket canaries (the TCP echo protocol on an abstract name and on a socket file):
// round trip, hits with the peer's credentials, a connect that sends nothing leaves no hit, and
// UnixListening() true while they live, false once stopped (a dead listener refuses too).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>

#include "canary/canary.h"
#include "canary/canary_testing.h"
#include "canary/net_util.h"

namespace sandprobe::canary {
namespace {

std::string UnixExchange(const std::string& name, bool abstract, const std::string& line) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path + (abstract ? 1 : 0), name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), length) != 0) return "refused";
  testing::SetTimeouts(fd.get(), 3);
  testing::SendAll(fd.get(), line);
  return testing::ReceiveAll(fd.get());
}

class UnixCanaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sp-unix-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "unix.sock").string();
    name_ = "sandprobe-test-" + std::to_string(getpid());
    CanaryOptions options;
    options.abstract_unix_name = name_;
    options.unix_socket_path = path_;
    auto started = CanarySet::Start("127.0.0.1", "n0nce", options);
    ASSERT_TRUE(started.has_value()) << started.error();
    set_ = std::move(*started);
  }
  void TearDown() override {
    set_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::string path_, name_;
  std::unique_ptr<CanarySet> set_;
};

TEST_F(UnixCanaryTest, EchoOnTheAbstractNameAndTheSocketFile) {
  EXPECT_EQ(UnixExchange(name_, true, "SANDPROBE n0nce inv-a\n"), "SANDPROBE-ECHO n0nce inv-a\n");
  EXPECT_EQ(UnixExchange(path_, false, "SANDPROBE n0nce inv-p\n"), "SANDPROBE-ECHO n0nce inv-p\n");
  const auto a = set_->HitsFor("inv-a");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, "abstract-unix");
  EXPECT_EQ(a[0].peer, "unix pid " + std::to_string(getpid()) + " uid " + std::to_string(getuid()));
  const auto p = set_->HitsFor("inv-p");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, "unix");
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u) << "any uid that sees the file may connect";
  EXPECT_EQ(UnixExchange(name_, true, "SANDPROBE other inv-x\n"), "") << "foreign nonce";
  EXPECT_TRUE(set_->HitsFor("inv-x").empty());
}

TEST_F(UnixCanaryTest, ListeningUntilStoppedAndTheSelfCheckLeavesNoHit) {
  const size_t before = set_->AllHits().size();
  EXPECT_TRUE(set_->UnixListening());
  EXPECT_EQ(set_->AllHits().size(), before);
  set_->Stop();
  EXPECT_FALSE(set_->UnixListening());
  EXPECT_EQ(UnixExchange(name_, true, "SANDPROBE n0nce inv-d\n"), "refused")
      << "a dead listener's abstract name refuses, like another network namespace";
  EXPECT_EQ(UnixExchange(path_, false, "SANDPROBE n0nce inv-d\n"), "refused");
}

TEST(UnixCanaryNames, TooLongOrTakenIsAnError) {
  CanaryOptions options;
  options.unix_socket_path = "/tmp/" + std::string(120, 'x');
  auto started = CanarySet::Start("127.0.0.1", "n0nce", options);
  ASSERT_FALSE(started.has_value());
  EXPECT_NE(started.error().find("longer than"), std::string::npos) << started.error();
  CanaryOptions twice;
  twice.abstract_unix_name = "sandprobe-twice-" + std::to_string(getpid());
  auto first = CanarySet::Start("127.0.0.1", "n0nce", twice);
  ASSERT_TRUE(first.has_value()) << first.error();
  auto second = CanarySet::Start("127.0.0.1", "n0nce", twice);
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().find("Address already in use"), std::string::npos) << second.error();
}

}  // namespace
}  // namespace sandprobe::canary
