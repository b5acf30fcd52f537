// DNS canary: the wire parser's table (including the fuzz table of malformed packets) and
// round trips over real loopback UDP and TCP (RFC 1035 section 4.2.2 length prefix).
#include "canary/dns_canary.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "canary/canary.h"
#include "canary/canary_testing.h"
#include "canary/dns_wire.h"

namespace sandprobe::canary {
namespace {

using testing::BuildQuery;
using testing::UdpExchange;
using Bytes = std::vector<uint8_t>;

Bytes Header(uint8_t flags_high, uint16_t qdcount) {
  return {0x12, 0x34, flags_high, 0x00, 0x00, static_cast<uint8_t>(qdcount), 0, 0, 0, 0, 0, 0};
}

Bytes Concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes LongLabels(int count, uint8_t length) {
  Bytes out;
  for (int i = 0; i < count; ++i) {
    out.push_back(length);
    out.insert(out.end(), length, 'a');
  }
  out.push_back(0);
  return out;
}

struct BadPacket {
  const char* name;
  Bytes packet;
  DnsParseError want;
};

std::vector<BadPacket> FuzzTable() {
  const Bytes type_class = {0, 1, 0, 1};
  return {
      {"zero-length", {}, DnsParseError::kShortHeader},
      {"truncated header", Bytes(11, 0), DnsParseError::kShortHeader},
      {"response bit set", Concat(Header(0x81, 1), {1, 'a', 0, 0, 1, 0, 1}),
       DnsParseError::kNotQuery},
      {"opcode status", Concat(Header(0x10, 1), {0, 0, 1, 0, 1}), DnsParseError::kNotQuery},
      {"no question", Header(0x01, 0), DnsParseError::kQuestionCount},
      {"two questions", Concat(Header(0x01, 2), {0, 0, 1, 0, 1}), DnsParseError::kQuestionCount},
      {"name missing", Header(0x01, 1), DnsParseError::kTruncatedName},
      {"label past end", Concat(Header(0x01, 1), {5, 'a', 'b'}), DnsParseError::kTruncatedName},
      {"no root label", Concat(Header(0x01, 1), {1, 'a'}), DnsParseError::kTruncatedName},
      {"pointer loop", Concat(Header(0x01, 1), {0xc0, 0x0c}), DnsParseError::kCompressionPointer},
      {"pointer after label", Concat(Header(0x01, 1), {1, 'a', 0xc0, 0x0c, 0, 1, 0, 1}),
       DnsParseError::kCompressionPointer},
      {"label of 64", Concat(Concat(Header(0x01, 1), LongLabels(1, 64)), type_class),
       DnsParseError::kLabelTooLong},
      {"extended label type", Concat(Header(0x01, 1), {0x41, 0}), DnsParseError::kLabelTooLong},
      {"name over 255", Concat(Concat(Header(0x01, 1), LongLabels(4, 63)), type_class),
       DnsParseError::kNameTooLong},
      {"type missing", Concat(Header(0x01, 1), {1, 'a', 0, 0}), DnsParseError::kTruncatedQuestion},
  };
}

TEST(DnsWireTest, ParsesAStandardQuery) {
  Bytes packet = BuildQuery(0xbeef, "inv-1.n0nce.sandprobe.test");
  packet.insert(packet.end(), {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0});  // trailing EDNS OPT: ignored
  packet[11] = 1;                                                      // ARCOUNT=1
  auto query = ParseDnsQuery(packet);
  ASSERT_TRUE(query.has_value()) << ToString(query.error());
  EXPECT_EQ(query->id, 0xbeef);
  EXPECT_TRUE(query->recursion_desired);
  EXPECT_EQ(query->labels, (std::vector<std::string>{"inv-1", "n0nce", "sandprobe", "test"}));
  EXPECT_EQ(query->qtype, 1);
  EXPECT_EQ(query->qclass, 1);
  EXPECT_EQ(DottedName(*query), "inv-1.n0nce.sandprobe.test");
  EXPECT_EQ(query->question.size(), packet.size() - 12 - 11);
}

TEST(DnsWireTest, AcceptsTheLongestLegalNameAndTheRoot) {
  // 3 labels of 63 + 1 of 61 + root = 255 bytes in wire form.
  Bytes name = LongLabels(3, 63);
  name.pop_back();
  name.push_back(61);
  name.insert(name.end(), 61, 'b');
  name.push_back(0);
  EXPECT_TRUE(ParseDnsQuery(Concat(Concat(Header(0x00, 1), name), {0, 1, 0, 1})).has_value());
  auto root = ParseDnsQuery(Concat(Header(0x00, 1), {0, 0, 2, 0, 1}));
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(DottedName(*root), ".");
  EXPECT_FALSE(root->recursion_desired);
}

TEST(DnsWireTest, FuzzTableIsRejectedWithTheRightReason) {
  for (const BadPacket& bad : FuzzTable()) {
    auto query = ParseDnsQuery(bad.packet);
    ASSERT_FALSE(query.has_value()) << bad.name;
    EXPECT_EQ(query.error(), bad.want) << bad.name << ": got " << ToString(query.error());
  }
}

TEST(DnsWireTest, BuildsNxdomainEchoingTheQuestion) {
  const Bytes packet = BuildQuery(0x0102, "x.y");
  auto query = ParseDnsQuery(packet);
  ASSERT_TRUE(query.has_value());
  const Bytes want = Concat({0x01, 0x02, 0x81, 0x03, 0, 1, 0, 0, 0, 0, 0, 0},
                            Bytes(packet.begin() + 12, packet.end()));
  EXPECT_EQ(BuildNxdomainResponse(*query), want);
}

TEST(DnsWireTest, InvocationFromQuery) {
  const auto invocation = [](std::string name) {
    return InvocationFromQuery(*ParseDnsQuery(BuildQuery(1, name)), "n0nce");
  };
  EXPECT_EQ(invocation("inv-1.n0nce.sandprobe.test"), "inv-1");
  EXPECT_EQ(invocation("inv-1.N0NCE.sandprobe.test"), "inv-1");  // 0x20 case randomisation
  EXPECT_EQ(invocation("inv-1.other.sandprobe.test"), "");
  EXPECT_EQ(invocation("n0nce.sandprobe.test"), "");
  EXPECT_EQ(invocation("n0nce"), "");
  EXPECT_EQ(invocation("a\x01z.n0nce.sandprobe.test"), "");
}

using DnsCanaryTest = testing::OneCanaryTest<&CanarySet::dns_address>;

TEST_F(DnsCanaryTest, QueryRoundTrip) {
  const Bytes query = BuildQuery(0xabcd, "inv-1.n0nce.sandprobe.test");
  auto answer = UdpExchange(port_, query);
  ASSERT_TRUE(answer.has_value());
  ASSERT_EQ(answer->size(), query.size());
  EXPECT_EQ((*answer)[0], 0xab);
  EXPECT_EQ((*answer)[1], 0xcd);
  EXPECT_EQ((*answer)[2], 0x81);         // QR=1, OPCODE=0, RD copied
  EXPECT_EQ((*answer)[3] & 0x8f, 0x03);  // RA=0, RCODE=3 NXDOMAIN
  EXPECT_EQ(Bytes(answer->begin() + 4, answer->begin() + 12), Bytes({0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Bytes(answer->begin() + 12, answer->end()), Bytes(query.begin() + 12, query.end()));

  ExpectOneHit("inv-1", "dns", "inv-1.n0nce.sandprobe.test");
}

TEST_F(DnsCanaryTest, ForeignNameIsAnsweredWithoutInvocation) {
  auto answer = UdpExchange(port_, BuildQuery(7, "inv-2.other.sandprobe.test", 28));
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ((*answer)[3] & 0x0f, 3);
  EXPECT_TRUE(set_->HitsFor("inv-2").empty());
  ASSERT_EQ(set_->AllHits().size(), 1u);
  EXPECT_EQ(set_->AllHits()[0].invocation, "");
}

TEST_F(DnsCanaryTest, MalformedPacketsGetNoAnswerAndNoHit) {
  for (const BadPacket& bad : FuzzTable()) {
    EXPECT_FALSE(UdpExchange(port_, bad.packet, 100).has_value()) << bad.name;
  }
  // Still serving, and the malformed packets left nothing in the log.
  auto answer = UdpExchange(port_, BuildQuery(0x4242, "inv-3.n0nce.sandprobe.test"));
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ((*answer)[0], 0x42);
  const auto all = set_->AllHits();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].invocation, "inv-3");
}

// The two-byte big-endian length prefix of DNS over TCP.
std::string Framed(const Bytes& message) {
  std::string out{static_cast<char>(message.size() >> 8), static_cast<char>(message.size() & 0xff)};
  out.append(message.begin(), message.end());
  return out;
}

TEST_F(DnsCanaryTest, TcpOnTheSamePortAnswersEveryQueryOfOneStream) {
  // glibc's resolver with "options use-vc" sends A and AAAA on one connection, the second
  // query split across two writes here to check the reassembly.
  const Bytes a = BuildQuery(0x0a0a, "inv-t.n0nce.sandprobe.test");
  const Bytes aaaa = BuildQuery(0x1c1c, "inv-t.n0nce.sandprobe.test", 28);
  UniqueFd fd = testing::ConnectTcp(port_);
  ASSERT_TRUE(fd.valid());
  const std::string second = Framed(aaaa);
  ASSERT_TRUE(testing::SendAll(fd.get(), Framed(a) + second.substr(0, 5)));
  ::usleep(50'000);
  ASSERT_TRUE(testing::SendAll(fd.get(), second.substr(5)));
  ::shutdown(fd.get(), SHUT_WR);
  const std::string got = testing::ReceiveAll(fd.get());
  ASSERT_EQ(got.size(), 4 + a.size() + aaaa.size());
  EXPECT_EQ(static_cast<uint8_t>(got[0]) << 8 | static_cast<uint8_t>(got[1]), a.size());
  EXPECT_EQ(static_cast<uint8_t>(got[2]), 0x0a);             // id of the first query
  EXPECT_EQ(static_cast<uint8_t>(got[5]) & 0x0f, 3);         // NXDOMAIN
  EXPECT_EQ(static_cast<uint8_t>(got[4 + a.size()]), 0x1c);  // id of the second query
  const auto hits = set_->HitsFor("inv-t");
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].kind, "dns-tcp");
  EXPECT_EQ(hits[1].detail, "inv-t.n0nce.sandprobe.test");
}

TEST_F(DnsCanaryTest, TcpOversizedOrMalformedGetsNoAnswer) {
  // A length above the limit closes the stream unanswered; a malformed message is dropped and
  // the stream stays usable.
  EXPECT_EQ(testing::TcpExchange(port_, std::string("\xff\xff") + std::string(64, 'x')), "");
  const Bytes good = BuildQuery(0x4343, "inv-u.n0nce.sandprobe.test");
  const std::string got = testing::TcpExchange(port_, Framed(FuzzTable()[4].packet) + Framed(good));
  ASSERT_EQ(got.size(), 2 + good.size());
  EXPECT_EQ(static_cast<uint8_t>(got[2]), 0x43);
  // This test speaks TCP only: its hits are the "dns-tcp" ones. The whole suite run two at a time
  // gave two hits here (twice in three ASan runs, 2026-12-07; their kinds were not printed then):
  // a UDP datagram from another test process, sent to a port this canary holds now, would be a
  // "dns" hit and is not this test's. A second "dns-tcp" hit still fails, printing every hit.
  std::vector<Hit> tcp;
  std::string seen;
  for (const Hit& h : set_->AllHits()) {
    seen += h.kind + " " + h.invocation + " " + h.detail + "; ";
    if (h.kind == "dns-tcp") tcp.push_back(h);
  }
  ASSERT_EQ(tcp.size(), 1u) << seen;
  EXPECT_EQ(tcp[0].invocation, "inv-u") << seen;
}

}  // namespace
}  // namespace sandprobe::canary
