// CanarySet over real loopback sockets: the HTTP canary, filtering by invocation, start-up
// errors, Stop() and the hit cap. TCP and DNS details live in tcp_/dns_canary_test.cc.
#include "canary/canary.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "canary/canary_testing.h"

namespace sandprobe::canary {
namespace {

using testing::BuildQuery;
using testing::ConnectTcp;
using testing::Loopback;
using testing::PortOf;
using testing::TcpExchange;
using testing::UdpExchange;

class CanarySetTest : public testing::CanarySetTest {
 protected:
  httplib::Result Get(const std::string& path, const httplib::Headers& headers = {}) {
    httplib::Client client("127.0.0.1", PortOf(set_->http_address()));
    client.set_connection_timeout(2);
    client.set_read_timeout(2);
    return client.Get(path, headers);
  }
};

TEST_F(CanarySetTest, AddressesAreLoopbackWithKernelPorts) {
  for (const std::string& address :
       {set_->http_address(), set_->tcp_address(), set_->dns_address(), set_->docker_address()}) {
    EXPECT_TRUE(address.starts_with("127.0.0.1:")) << address;
    EXPECT_GT(PortOf(address), 0) << address;
  }
}

TEST_F(CanarySetTest, HttpHitWithHeader) {
  auto result = Get("/version", {{"X-Sandprobe", "n0nce inv-1"}});
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->body, "sandprobe-canary n0nce\n");
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/plain");
  ExpectOneHit("inv-1", "http", "GET /version");
}

TEST_F(CanarySetTest, HttpWithoutHeaderStillAnswersAndLogsNoInvocation) {
  // An IMDSv1 GET of a long path: IMDSv2's refusal (401) is still an answer, and logged.
  auto result = Get("/latest/meta-data/" + std::string(500, 'p'));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 401);
  EXPECT_EQ(result->body, "sandprobe-canary n0nce\n");
  const auto all = set_->AllHits();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].invocation, "");
  EXPECT_EQ(all[0].detail.size(), 200u);  // bounded
}

// The Docker API canary (docs/probes.md, net.docker-api): enough of the Engine API that a probe
// recognises a daemon, never a real one; every request logged as a "docker" hit.
TEST_F(CanarySetTest, DockerApiAnswersPingAndVersionAndLogsTheNonce) {
  ASSERT_NE(set_->docker_address(), set_->http_address());
  httplib::Client client("127.0.0.1", PortOf(set_->docker_address()));
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  const httplib::Headers tag = {{"X-Sandprobe", "n0nce inv-d"}};
  auto ping = client.Get("/_ping", tag);
  ASSERT_TRUE(ping) << httplib::to_string(ping.error());
  EXPECT_EQ(ping->status, 200);
  EXPECT_EQ(ping->body, "OK");
  EXPECT_EQ(ping->get_header_value("Api-Version"), "1.41");
  auto version = client.Get("/v1.41/version", tag);
  ASSERT_TRUE(version);
  EXPECT_EQ(version->status, 200);
  const auto body = nlohmann::json::parse(version->body);
  EXPECT_EQ(body["ApiVersion"], "1.41");
  EXPECT_EQ(body["Version"], "sandprobe-canary");
  EXPECT_EQ(body["SandprobeNonce"], "n0nce");
  auto other = client.Post("/containers/create", tag, "{}", "application/json");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);  // nothing is ever created or forwarded
  const auto hits = set_->HitsFor("inv-d");
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].kind, "docker");
  EXPECT_EQ(hits[0].detail, "GET /_ping");
  EXPECT_EQ(hits[2].detail, "POST /containers/create");
}

TEST_F(CanarySetTest, HttpForeignNonceHasNoInvocation) {
  auto result = Get("/", {{"X-Sandprobe", "othernonce inv-2"}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
  EXPECT_TRUE(set_->HitsFor("inv-2").empty());
  EXPECT_EQ(set_->HitsFor("").size(), 1u);
}

TEST_F(CanarySetTest, HitsForFiltersByInvocationAcrossKinds) {
  ASSERT_TRUE(Get("/a", {{"X-Sandprobe", "n0nce inv-a"}}));
  const uint16_t tcp = PortOf(set_->tcp_address());
  ASSERT_EQ(TcpExchange(tcp, "SANDPROBE n0nce inv-b\n"), "SANDPROBE-ECHO n0nce inv-b\n");
  ASSERT_TRUE(
      UdpExchange(PortOf(set_->dns_address()), BuildQuery(1, "inv-a.n0nce.sandprobe.test")));
  const auto a = set_->HitsFor("inv-a");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].kind, "http");
  EXPECT_EQ(a[1].kind, "dns");
  const auto b = set_->HitsFor("inv-b");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].kind, "tcp");
  EXPECT_TRUE(set_->HitsFor("inv-c").empty());
  EXPECT_EQ(set_->AllHits().size(), 3u);
}

TEST_F(CanarySetTest, StopIsPromptWithSilentClientsAndFreesThePorts) {
  const uint16_t http = PortOf(set_->http_address());
  const uint16_t tcp = PortOf(set_->tcp_address());
  const uint16_t dns = PortOf(set_->dns_address());
  UniqueFd silent_http = ConnectTcp(http);
  UniqueFd silent_tcp = ConnectTcp(tcp);
  ASSERT_TRUE(silent_http.valid() && silent_tcp.valid());

  const auto start = std::chrono::steady_clock::now();
  set_->Stop();
  set_->Stop();  // idempotent
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));

  EXPECT_FALSE(ConnectTcp(http).valid());
  EXPECT_FALSE(ConnectTcp(tcp).valid());
  for (const auto& [type, port] :
       {std::pair{SOCK_STREAM, http}, {SOCK_STREAM, tcp}, {SOCK_DGRAM, dns}}) {
    auto rebound = BindSocket(type, Loopback(0).sin_addr, port);
    EXPECT_TRUE(rebound.has_value()) << rebound.error();
  }
  EXPECT_EQ(set_->http_address(), fmt::format("127.0.0.1:{}", http));  // still readable
}

TEST_F(CanarySetTest, ConcurrentClientsAndReaders) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 10; ++i) {
        EXPECT_TRUE(Get("/c", {{"X-Sandprobe", fmt::format("n0nce inv-{}", t)}}));
        EXPECT_LE(set_->AllHits().size(), 40u);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(set_->AllHits().size(), 40u);
  for (int t = 0; t < 4; ++t) EXPECT_EQ(set_->HitsFor(fmt::format("inv-{}", t)).size(), 10u);
}

TEST(CanarySetStartTest, HitCapDropsAndCounts) {
  auto set = CanarySet::Start("127.0.0.1", "n0nce", {.max_hits = 3});
  ASSERT_TRUE(set.has_value()) << set.error();
  const uint16_t dns = PortOf((*set)->dns_address());
  for (uint16_t id = 0; id < 5; ++id) {
    ASSERT_TRUE(UdpExchange(dns, BuildQuery(id, "inv.n0nce.sandprobe.test")));
  }
  EXPECT_EQ((*set)->AllHits().size(), 3u);
  EXPECT_EQ((*set)->dropped_hits(), 2u);
}

TEST(CanarySetStartTest, RejectsBadArguments) {
  for (const std::string& nonce :
       std::vector<std::string>{"", "two words", "a.b", std::string(64, 'n')}) {
    auto set = CanarySet::Start("127.0.0.1", nonce);
    ASSERT_FALSE(set.has_value()) << nonce;
    EXPECT_TRUE(set.error().starts_with("canary: invalid nonce")) << set.error();
  }
  for (const std::string& address :
       std::vector<std::string>{"localhost", "256.0.0.1", "::1", "", "0.0.0.0"}) {
    auto set = CanarySet::Start(address, "n0nce");
    ASSERT_FALSE(set.has_value()) << address;
    EXPECT_TRUE(set.error().starts_with("canary: ")) << set.error();
  }
  for (const std::string& v6 : std::vector<std::string>{"::", "127.0.0.1", "[::1]", "fe80::x"}) {
    auto set = CanarySet::Start("127.0.0.1", "n0nce", {.http6_bind = v6, .http6_optional = true});
    ASSERT_FALSE(set.has_value()) << v6;  // a malformed address is an error even when optional
    EXPECT_TRUE(set.error().starts_with("canary: ")) << set.error();
  }
}

// The IPv6 listener on ::1: the same canary (hits in the one log, peers in brackets, the cloud
// shapes), its own address; an address this host does not have fails, or is only noted when
// optional (a host without IPv6 still runs every other row).
TEST(CanarySetStartTest, Ipv6ListenerOnLoopback) {
  auto set = CanarySet::Start("127.0.0.1", "n0nce", {.http6_bind = "::1"});
  ASSERT_TRUE(set.has_value()) << set.error();
  const std::string address = (*set)->http6_address();
  ASSERT_TRUE(address.starts_with("[::1]:")) << address;
  httplib::Client client("::1", PortOf(address));
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  auto result = client.Get("/latest/meta-data/", {{"X-Sandprobe", "n0nce inv-6"}});
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 401);  // IMDSv2 without a token
  const auto hits = (*set)->HitsFor("inv-6");
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_TRUE(hits[0].peer.starts_with("[::1]:")) << hits[0].peer;
  EXPECT_EQ((*set)->http6_error(), "");
}

TEST(CanarySetStartTest, Ipv6ListenerThatCannotBind) {
  // fd00:ec2::254 is not an address of this host unless a test made it: EADDRNOTAVAIL.
  auto soft =
      CanarySet::Start("127.0.0.1", "n0nce", {.http6_bind = "2001:db8::7", .http6_optional = true});
  ASSERT_TRUE(soft.has_value()) << soft.error();
  EXPECT_EQ((*soft)->http6_address(), "");
  EXPECT_TRUE((*soft)->http6_error().starts_with("bind [2001:db8::7]:0: "))
      << (*soft)->http6_error();
  auto hard = CanarySet::Start("127.0.0.1", "n0nce", {.http6_bind = "2001:db8::7"});
  ASSERT_FALSE(hard.has_value());
  EXPECT_TRUE(hard.error().starts_with("http canary (IPv6): bind [2001:db8::7]:0: "))
      << hard.error();
}

// The whole IMDSv2 flow and the credential paths over HTTP: the credential served is the one
// given, logged as kind "credential"; refusals are answers with the canary's body.
TEST(CanarySetStartTest, CloudShapesOverHttp) {
  auto set = CanarySet::Start("127.0.0.1", "n0nce", {.cloud_credential = "c0ffee-credential"});
  ASSERT_TRUE(set.has_value()) << set.error();
  httplib::Client client("127.0.0.1", PortOf((*set)->http_address()));
  client.set_connection_timeout(2);
  client.set_read_timeout(2);
  const httplib::Headers tag = {{"X-Sandprobe", "n0nce inv-c"}};
  auto with = [&](httplib::Headers more) {
    more.insert(tag.begin(), tag.end());
    return more;
  };
  auto put = client.Put("/latest/api/token", with({{"X-aws-ec2-metadata-token-ttl-seconds", "60"}}),
                        "", "text/plain");
  ASSERT_TRUE(put);
  ASSERT_EQ(put->status, 200);
  const std::string token = put->body;
  EXPECT_GT(token.size(), 20u);
  EXPECT_EQ(client.Get("/latest/meta-data/", tag)->status, 401);
  const auto roles = "/latest/meta-data/iam/security-credentials/";
  auto list = client.Get(roles, with({{"X-aws-ec2-metadata-token", token}}));
  ASSERT_TRUE(list);
  EXPECT_EQ(list->body, "sandprobe-canary-role");
  auto keys = client.Get(std::string(roles) + "sandprobe-canary-role",
                         with({{"X-aws-ec2-metadata-token", token}}));
  ASSERT_TRUE(keys);
  EXPECT_NE(keys->body.find("\"SecretAccessKey\": \"c0ffee-credential\""), std::string::npos)
      << keys->body;
  auto azure = client.Get("/metadata/identity/oauth2/token?api-version=2018-02-01&resource=x",
                          with({{"Metadata", "true"}}));
  ASSERT_TRUE(azure);
  EXPECT_EQ(azure->status, 200);
  EXPECT_EQ(client.Get("/metadata/identity/oauth2/token?resource=x", with({{"Metadata", "true"}}))
                ->status,
            400);  // no api-version: the query must reach the shapes as sent
  std::vector<std::string> kinds;
  for (const Hit& h : (*set)->HitsFor("inv-c")) kinds.push_back(h.kind + " " + h.detail);
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"http PUT /latest/api/token", "http GET /latest/meta-data/",
                                      "http GET /latest/meta-data/iam/security-credentials/",
                                      "credential GET /latest/meta-data/iam/security-credentials/"
                                      "sandprobe-canary-role",
                                      "credential GET /metadata/identity/oauth2/token",
                                      "http GET /metadata/identity/oauth2/token"}));
}

TEST(CanarySetStartTest, ErrorNamesTheListenerThatFailed) {
  auto taken_tcp = BindSocket(SOCK_STREAM, Loopback(0).sin_addr, 0);
  auto taken_udp = BindSocket(SOCK_DGRAM, Loopback(0).sin_addr, 0);
  ASSERT_TRUE(taken_tcp.has_value() && taken_udp.has_value());
  const uint16_t tcp_port = LocalPort(taken_tcp->get());
  const uint16_t udp_port = LocalPort(taken_udp->get());
  const struct {
    CanaryOptions options;
    std::string want;
  } cases[] = {
      {{.http_port = tcp_port}, fmt::format("http canary: bind 127.0.0.1:{}: ", tcp_port)},
      {{.tcp_port = tcp_port}, fmt::format("tcp canary: bind 127.0.0.1:{}: ", tcp_port)},
      {{.dns_port = udp_port}, fmt::format("dns canary: bind 127.0.0.1:{}: ", udp_port)},
  };
  for (const auto& c : cases) {
    auto set = CanarySet::Start("127.0.0.1", "n0nce", c.options);
    ASSERT_FALSE(set.has_value()) << c.want;
    EXPECT_TRUE(set.error().starts_with(c.want)) << set.error();
    EXPECT_NE(set.error().find("Address already in use"), std::string::npos) << set.error();
  }
}

}  // namespace
}  // namespace sandprobe::canary
