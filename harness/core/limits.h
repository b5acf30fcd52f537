// Limits a candidate sandbox claims (manifest `limits:`). Probes size their attacks from them and
// the judge checks the claims (the loop must end within timeout + grace). Pure parsing.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandprobe::core {

// limits.noexec: no writable path lets a copied binary execute (fs.write-exec judges it).
struct NoexecClaim {
  bool every_writable = false;     // `noexec: true`: every writable path the probe finds
  std::vector<std::string> paths;  // `noexec: [/tmp, /dev/shm]`: these paths (absolute, normal)
  bool operator==(const NoexecClaim&) const = default;
};

// limits.seccomp: a syscall filter the candidate claims (kernel.syscalls judges it).
enum class SeccompClaim {
  // `seccomp: default`: the calls a current container default profile refuses to an unprivileged
  // container (moby >= 25, containerd >= 2.0: bpf, perf_event_open, keyctl, io_uring_setup,
  // unshare, mount) are refused before they reach a kernel (docs/probes.md, kernel.syscalls).
  kDefault,
};

struct Limits {
  std::optional<double> timeout_s;       // seconds
  std::optional<uint64_t> memory_bytes;  // bytes
  std::optional<uint64_t> tmp_bytes;     // bytes of /tmp
  std::optional<uint64_t> pids;          // count
  std::optional<uint64_t> output_bytes;  // bytes of stdout+stderr the sandbox delivers
  std::optional<NoexecClaim> noexec;     // writable paths do not execute
  std::optional<SeccompClaim> seccomp;   // a syscall filter

  // The named limit in the given unit ("MiB", "KiB", "B", "s", "" = raw), or nullopt when the
  // candidate does not claim it. Names: memory, tmp, pids, timeout, output.
  std::optional<double> Get(std::string_view name, std::string_view unit) const;
};

// "timeout 10s, memory 256 MiB, tmp 32 MiB, pids 64, output 16 KiB, noexec /tmp, /dev/shm,
// seccomp default"; "" when nothing is claimed.
std::string DescribeLimits(const Limits& limits);

// "256Mi", "1Gi", "16Ki", "64M", "1024" (bytes). Errors name the offending text.
std::expected<uint64_t, std::string> ParseBytes(std::string_view text);
// "10s", "500ms", "2m", "1.5" (seconds). Errors name the offending text.
std::expected<double, std::string> ParseSeconds(std::string_view text);
// A path of a noexec claim: absolute, without "." or ".." parts or control characters, at most
// 4096 bytes; returned normalised ("//tmp/" -> "/tmp"). Errors name the offending text.
std::expected<std::string, std::string> ParseClaimPath(std::string_view text);
// "default" -> kDefault. Errors name the offending text and what is accepted.
std::expected<SeccompClaim, std::string> ParseSeccompClaim(std::string_view text);
std::string_view ToString(SeccompClaim claim);

}  // namespace sandprobe::core
