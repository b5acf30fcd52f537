#include "canary/hit_log.h"

#include <algorithm>
#include <utility>

namespace sandprobe::canary {

void HitLog::Record(Hit hit) {
  std::lock_guard lock(mutex_);
  if (hits_.size() >= capacity_) {
    ++dropped_;
    return;
  }
  hits_.push_back(std::move(hit));
}

std::vector<Hit> HitLog::Matching(std::string_view invocation) const {
  std::lock_guard lock(mutex_);
  std::vector<Hit> out;
  for (const Hit& hit : hits_) {
    if (hit.invocation == invocation) out.push_back(hit);
  }
  return out;
}

std::vector<Hit> HitLog::All() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

size_t HitLog::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

std::string Printable(std::string_view text, size_t max_bytes) {
  std::string out(text.substr(0, max_bytes));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

bool IsValidNonce(std::string_view nonce) {
  if (nonce.empty() || nonce.size() > kMaxNonceBytes) return false;
  return std::ranges::all_of(nonce, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
}

bool IsValidInvocation(std::string_view invocation) {
  if (invocation.empty() || invocation.size() > kMaxInvocationBytes) return false;
  return std::ranges::all_of(invocation, [](char c) { return c > 0x20 && c < 0x7f; });
}

std::string InvocationFromTag(std::string_view tag, std::string_view nonce) {
  const size_t space = tag.find(' ');
  if (space == std::string_view::npos) return "";
  const std::string_view first = tag.substr(0, space);
  const std::string_view second = tag.substr(space + 1);
  if (first != nonce || !IsValidInvocation(second)) return "";
  return std::string(second);
}

}  // namespace sandprobe::canary
