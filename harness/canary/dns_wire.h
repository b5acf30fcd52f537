// The tiny subset of the DNS wire format (RFC 1035 section 4) the DNS canary needs: parse a
// standard query with one question, and build the NXDOMAIN answer to it. The parser is
// defensive: every packet is untrusted, and anything outside the subset is rejected with a
// reason, never read past its end. Compression pointers are refused (queries never need them).
// Internal to harness/canary; pure functions, no I/O.
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sandprobe::canary {

inline constexpr size_t kDnsHeaderBytes = 12;
inline constexpr size_t kDnsMaxLabelBytes = 63;
inline constexpr size_t kDnsMaxNameBytes = 255;  // wire form: length octets + labels + root

enum class DnsParseError {
  kShortHeader,         // fewer than 12 bytes
  kNotQuery,            // QR=1 (a response) or OPCODE != 0 (not a standard query)
  kQuestionCount,       // QDCOUNT != 1
  kTruncatedName,       // the name runs past the end of the packet
  kCompressionPointer,  // a label starting with the 0b11 pointer bits
  kLabelTooLong,        // a label length above 63 (includes the reserved 0b01/0b10 types)
  kNameTooLong,         // the name above 255 bytes in wire form
  kTruncatedQuestion,   // QTYPE/QCLASS missing
};

std::string_view ToString(DnsParseError error);

struct DnsQuery {
  uint16_t id = 0;
  bool recursion_desired = false;
  std::vector<std::string> labels;  // raw label bytes, in order; empty for the root name
  uint16_t qtype = 0;
  uint16_t qclass = 0;
  std::vector<uint8_t> question;  // the question section exactly as received (name+type+class)
};

// Parses a standard query. Bytes after the question (e.g. an EDNS OPT record) are ignored.
std::expected<DnsQuery, DnsParseError> ParseDnsQuery(std::span<const uint8_t> packet);

// The answer: same id, QR=1, OPCODE=0, AA=0, TC=0, RD copied, RA=0, RCODE=3 (NXDOMAIN),
// QDCOUNT=1 with the question echoed byte for byte, and no answer/authority/additional records.
std::vector<uint8_t> BuildNxdomainResponse(const DnsQuery& query);

// The name in dotted form ("a.b.sandprobe.test"; "." for the root), untrusted bytes as received.
std::string DottedName(const DnsQuery& query);

}  // namespace sandprobe::canary
