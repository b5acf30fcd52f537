#include "canary/dns_wire.h"

namespace sandprobe::canary {
namespace {

uint16_t ReadU16(std::span<const uint8_t> bytes, size_t offset) {
  return static_cast<uint16_t>((bytes[offset] << 8) | bytes[offset + 1]);
}

void AppendU16(std::vector<uint8_t>& out, uint16_t value) {
  out.push_back(static_cast<uint8_t>(value >> 8));
  out.push_back(static_cast<uint8_t>(value & 0xff));
}

}  // namespace

std::string_view ToString(DnsParseError error) {
  switch (error) {
    case DnsParseError::kShortHeader:
      return "short header";
    case DnsParseError::kNotQuery:
      return "not a standard query";
    case DnsParseError::kQuestionCount:
      return "question count is not 1";
    case DnsParseError::kTruncatedName:
      return "truncated name";
    case DnsParseError::kCompressionPointer:
      return "compression pointer";
    case DnsParseError::kLabelTooLong:
      return "label longer than 63 bytes";
    case DnsParseError::kNameTooLong:
      return "name longer than 255 bytes";
    case DnsParseError::kTruncatedQuestion:
      return "truncated question";
  }
  return "unknown";
}

std::expected<DnsQuery, DnsParseError> ParseDnsQuery(std::span<const uint8_t> packet) {
  if (packet.size() < kDnsHeaderBytes) return std::unexpected(DnsParseError::kShortHeader);
  const uint8_t flags_high = packet[2];
  const bool is_response = (flags_high & 0x80) != 0;
  const int opcode = (flags_high >> 3) & 0x0f;
  if (is_response || opcode != 0) return std::unexpected(DnsParseError::kNotQuery);
  if (ReadU16(packet, 4) != 1) return std::unexpected(DnsParseError::kQuestionCount);

  DnsQuery query;
  query.id = ReadU16(packet, 0);
  query.recursion_desired = (flags_high & 0x01) != 0;
  size_t offset = kDnsHeaderBytes;
  size_t name_bytes = 0;
  while (true) {
    if (offset >= packet.size()) return std::unexpected(DnsParseError::kTruncatedName);
    const uint8_t length = packet[offset];
    if ((length & 0xc0) == 0xc0) return std::unexpected(DnsParseError::kCompressionPointer);
    if (length > kDnsMaxLabelBytes) return std::unexpected(DnsParseError::kLabelTooLong);
    name_bytes += 1u + length;
    if (name_bytes > kDnsMaxNameBytes) return std::unexpected(DnsParseError::kNameTooLong);
    ++offset;
    if (length == 0) break;
    if (packet.size() - offset < length) return std::unexpected(DnsParseError::kTruncatedName);
    query.labels.emplace_back(reinterpret_cast<const char*>(&packet[offset]), length);
    offset += length;
  }
  if (packet.size() - offset < 4) return std::unexpected(DnsParseError::kTruncatedQuestion);
  query.qtype = ReadU16(packet, offset);
  query.qclass = ReadU16(packet, offset + 2);
  offset += 4;
  query.question.assign(packet.begin() + kDnsHeaderBytes, packet.begin() + offset);
  return query;
}

std::vector<uint8_t> BuildNxdomainResponse(const DnsQuery& query) {
  std::vector<uint8_t> out;
  out.reserve(kDnsHeaderBytes + query.question.size());
  AppendU16(out, query.id);
  out.push_back(static_cast<uint8_t>(0x80 | (query.recursion_desired ? 0x01 : 0x00)));
  out.push_back(0x03);  // RA=0, Z=0, RCODE=3 NXDOMAIN
  AppendU16(out, 1);    // QDCOUNT
  AppendU16(out, 0);    // ANCOUNT
  AppendU16(out, 0);    // NSCOUNT
  AppendU16(out, 0);    // ARCOUNT
  out.insert(out.end(), query.question.begin(), query.question.end());
  return out;
}

std::string DottedName(const DnsQuery& query) {
  if (query.labels.empty()) return ".";
  std::string name;
  for (const std::string& label : query.labels) {
    if (!name.empty()) name += '.';
    name += label;
  }
  return name;
}

}  // namespace sandprobe::canary
