#include "core/limits.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

namespace sandprobe::core {
namespace {

// Splits "256Mi" into 256 and "Mi"; the number may carry a fraction.
bool SplitNumber(std::string_view text, double& number, std::string_view& suffix) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (ec != std::errc() || ptr != text.data() + i || !std::isfinite(number) || number < 0) {
    return false;
  }
  suffix = text.substr(i);
  return true;
}

}  // namespace

std::expected<uint64_t, std::string> ParseBytes(std::string_view text) {
  double n = 0;
  std::string_view suffix;
  if (!SplitNumber(text, n, suffix)) {
    return std::unexpected(
        fmt::format("'{}' is not a size (expected e.g. 256Mi, 64M, 1024)", text));
  }
  static constexpr struct {
    std::string_view suffix;
    double scale;
  } kUnits[] = {{"", 1},         {"B", 1},           {"k", 1e3},
                {"K", 1e3},      {"M", 1e6},         {"G", 1e9},
                {"Ki", 1024.0},  {"Mi", 1048576.0},  {"Gi", 1073741824.0},
                {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  for (const auto& u : kUnits) {
    if (u.suffix == suffix) {
      const double bytes = n * u.scale;
      if (bytes > 1.8e19) return std::unexpected(fmt::format("'{}' is too large", text));
      return static_cast<uint64_t>(std::llround(bytes));
    }
  }
  return std::unexpected(
      fmt::format("'{}' has an unknown unit '{}' (use B, K, M, G, Ki, Mi, Gi)", text, suffix));
}

std::expected<double, std::string> ParseSeconds(std::string_view text) {
  double n = 0;
  std::string_view suffix;
  if (!SplitNumber(text, n, suffix)) {
    return std::unexpected(fmt::format("'{}' is not a duration (expected e.g. 10s, 500ms)", text));
  }
  if (suffix.empty() || suffix == "s") return n;
  if (suffix == "ms") return n / 1000.0;
  if (suffix == "m") return n * 60.0;
  if (suffix == "h") return n * 3600.0;
  return std::unexpected(
      fmt::format("'{}' has an unknown unit '{}' (use ms, s, m, h)", text, suffix));
}

std::expected<std::string, std::string> ParseClaimPath(std::string_view text) {
  if (text.empty() || text.front() != '/') {
    return std::unexpected(fmt::format("'{}' is not an absolute path", text));
  }
  if (text.size() > 4096) return std::unexpected("the path is longer than 4096 bytes");
  for (const char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return std::unexpected("the path holds a control character");
    }
  }
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t end = std::min(text.find('/', i), text.size());
    const std::string_view part = text.substr(i, end - i);
    if (part == "." || part == "..") {
      return std::unexpected(
          fmt::format("'{}' has a '{}' part (write the path itself)", text, part));
    }
    if (!part.empty()) out += "/" + std::string(part);
    i = end + 1;
  }
  return out.empty() ? "/" : out;
}

std::expected<SeccompClaim, std::string> ParseSeccompClaim(std::string_view text) {
  if (text == "default") return SeccompClaim::kDefault;
  return std::unexpected(fmt::format("'{}' is not a seccomp claim (expected default)", text));
}

std::string_view ToString(SeccompClaim claim) {
  switch (claim) {
    case SeccompClaim::kDefault:
      return "default";
  }
  return "?";
}

std::string DescribeLimits(const Limits& l) {
  std::vector<std::string> parts;
  const auto bytes = [](uint64_t b) {
    if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
    if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
    if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
    return fmt::format("{} B", b);
  };
  if (l.timeout_s) parts.push_back(fmt::format("timeout {:g}s", *l.timeout_s));
  if (l.memory_bytes) parts.push_back("memory " + bytes(*l.memory_bytes));
  if (l.tmp_bytes) parts.push_back("tmp " + bytes(*l.tmp_bytes));
  if (l.pids) parts.push_back(fmt::format("pids {}", *l.pids));
  if (l.output_bytes) parts.push_back("output " + bytes(*l.output_bytes));
  if (l.noexec) {
    parts.push_back(l.noexec->every_writable
                        ? std::string("noexec every writable path")
                        : fmt::format("noexec {}", fmt::join(l.noexec->paths, " ")));
  }
  if (l.seccomp) parts.push_back(fmt::format("seccomp {}", ToString(*l.seccomp)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::optional<double> Limits::Get(std::string_view name, std::string_view unit) const {
  std::optional<double> raw;
  bool is_bytes = true;
  if (name == "memory" && memory_bytes) raw = static_cast<double>(*memory_bytes);
  if (name == "tmp" && tmp_bytes) raw = static_cast<double>(*tmp_bytes);
  if (name == "output" && output_bytes) raw = static_cast<double>(*output_bytes);
  if (name == "pids" && pids) {
    raw = static_cast<double>(*pids);
    is_bytes = false;
  }
  if (name == "timeout" && timeout_s) {
    raw = *timeout_s;
    is_bytes = false;
  }
  if (!raw) return std::nullopt;
  if (!is_bytes || unit.empty() || unit == "B" || unit == "s") return raw;
  if (unit == "KiB") return *raw / 1024.0;
  if (unit == "MiB") return *raw / 1048576.0;
  if (unit == "GiB") return *raw / 1073741824.0;
  return raw;
}

}  // namespace sandprobe::core
