// Limits a candidate sandbox claims (manifest `limits:`). Probes size their attacks from them and
// the judge checks the claims (the loop must end within timeout + grace). Pure parsing.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace sandprobe::core {

struct Limits {
  std::optional<double> timeout_s;       // seconds
  std::optional<uint64_t> memory_bytes;  // bytes
  std::optional<uint64_t> tmp_bytes;     // bytes of /tmp
  std::optional<uint64_t> pids;          // count
  std::optional<uint64_t> output_bytes;  // bytes of stdout+stderr the sandbox delivers

  // The named limit in the given unit ("MiB", "KiB", "B", "s", "" = raw), or nullopt when the
  // candidate does not claim it. Names: memory, tmp, pids, timeout, output.
  std::optional<double> Get(std::string_view name, std::string_view unit) const;
};

// "timeout 10s, memory 256 MiB, tmp 32 MiB, pids 64, output 16 KiB"; "" when nothing is claimed.
std::string DescribeLimits(const Limits& limits);

// "256Mi", "1Gi", "16Ki", "64M", "1024" (bytes). Errors name the offending text.
std::expected<uint64_t, std::string> ParseBytes(std::string_view text);
// "10s", "500ms", "2m", "1.5" (seconds). Errors name the offending text.
std::expected<double, std::string> ParseSeconds(std::string_view text);

}  // namespace sandprobe::core
