// The shared, bounded, thread-safe log of canary hits, and the text rules every listener applies
// to what it logs (bounding, printable bytes, what counts as a nonce or an invocation id).
// Internal to harness/canary.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "canary/canary.h"

namespace sandprobe::canary {

inline constexpr size_t kMaxDetailBytes = 200;
inline constexpr size_t kMaxInvocationBytes = 128;
inline constexpr size_t kMaxNonceBytes = 63;  // one DNS label

// Keeps the first `capacity` hits; counts the rest as dropped. All methods are thread-safe.
class HitLog {
 public:
  explicit HitLog(size_t capacity) : capacity_(capacity) {}

  void Record(Hit hit);
  std::vector<Hit> Matching(std::string_view invocation) const;
  std::vector<Hit> All() const;
  size_t dropped() const;

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Hit> hits_;
  size_t dropped_ = 0;
};

// At most max_bytes of text, each byte outside 0x20..0x7e replaced by '?'.
std::string Printable(std::string_view text, size_t max_bytes = kMaxDetailBytes);

// 1..63 bytes of [A-Za-z0-9_-].
bool IsValidNonce(std::string_view nonce);

// 1..128 bytes of printable ASCII without spaces (0x21..0x7e).
bool IsValidInvocation(std::string_view invocation);

// For "<nonce> <invocation>" (the HTTP header value and the tail of the TCP line): the
// invocation when the text is exactly two space-separated tokens, the first equal to `nonce`
// and the second a valid invocation; "" otherwise.
std::string InvocationFromTag(std::string_view tag, std::string_view nonce);

}  // namespace sandprobe::canary
