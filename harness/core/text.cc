#include "core/text.h"

#include <algorithm>

#include "core/output.h"

namespace sandprobe::core {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

size_t Utf8PrefixBytes(std::string_view text, size_t max_bytes) {
  size_t cut = std::min(text.size(), max_bytes);
  while (cut > 0 && cut < text.size() && IsContinuation(text[cut])) --cut;
  return cut;
}

std::string Bounded(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  return std::string(s.substr(0, Utf8PrefixBytes(s, max_bytes))) + std::string(kEllipsis);
}

std::string CutUtf8(std::string_view text, size_t max_bytes, bool force_ellipsis) {
  if (!force_ellipsis && text.size() <= max_bytes) return std::string(text);
  if (max_bytes < kEllipsis.size()) return "";
  return std::string(text.substr(0, Utf8PrefixBytes(text, max_bytes - kEllipsis.size()))) +
         std::string(kEllipsis);
}

std::string OneLine(std::string_view text, size_t max_bytes, bool trim_end) {
  const size_t read = max_bytes > text.size() ? text.size() : max_bytes + 60;
  std::string s = SanitizeUtf8(text.substr(0, read));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  if (trim_end) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
  }
  // Spaces trimmed from a prefix are not the text's end: the cut is still marked.
  if (read < text.size() && s.size() <= max_bytes) return s + std::string(kEllipsis);
  return Bounded(s, max_bytes);
}

}  // namespace sandprobe::core
