#include "report/text_clean.h"

#include <algorithm>
#include <cstdint>

#include "core/output.h"

namespace sandprobe::report {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026, one display column

// Length of the UTF-8 sequence starting with lead byte c (input is valid UTF-8).
size_t SequenceLength(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  return 4;
}

uint32_t Decode(std::string_view s, size_t i, size_t len) {
  const auto lead = static_cast<unsigned char>(s[i]);
  uint32_t cp = len == 1 ? lead : lead & (0xFF >> (len + 1));
  for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
  return cp;
}

bool Removed(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFFFE || cp == 0xFFFF;
}

// Index just past the escape sequence that starts at s[i] == ESC. Only ASCII bytes are consumed,
// so the result is always on a code point boundary.
size_t SkipEscape(std::string_view s, size_t i) {
  const size_t n = s.size();
  size_t j = i + 1;
  if (j >= n) return j;
  const char c = s[j];
  if (c == '[') {  // CSI: parameter and intermediate bytes, then one final byte
    ++j;
    while (j < n && s[j] >= 0x20 && s[j] <= 0x3F) ++j;
    if (j < n && s[j] >= 0x40 && s[j] <= 0x7E) ++j;
    return j;
  }
  if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {  // OSC, DCS, SOS, PM, APC
    ++j;
    while (j < n && s[j] != '\x07' && s[j] != '\x1b' && s[j] != '\n') ++j;
    if (j < n && s[j] == '\x07') return j + 1;
    if (j + 1 < n && s[j] == '\x1b' && s[j + 1] == '\\') return j + 2;
    return j;
  }
  while (j < n && s[j] >= 0x20 && s[j] <= 0x2F) ++j;  // nF intermediates, e.g. ESC ( B
  if (j < n && s[j] >= 0x30 && s[j] <= 0x7E) ++j;
  return j;
}

size_t CodePointWidth(uint32_t cp) {
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x1AB0 && cp <= 0x1AFF) ||
      (cp >= 0x1DC0 && cp <= 0x1DFF) || (cp >= 0x200B && cp <= 0x200F) ||
      (cp >= 0x20D0 && cp <= 0x20FF) || (cp >= 0xFE00 && cp <= 0xFE0F) ||
      (cp >= 0xFE20 && cp <= 0xFE2F)) {
    return 0;
  }
  if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
      (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
      (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
      (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
      (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD)) {
    return 2;
  }
  return 1;
}

// The prefix of raw that BoundedText/BoundedUtf8 read: proportional to max_bytes, ending on a
// UTF-8 lead byte so the cut itself does not create a replacement character.
std::string_view ReadPrefix(std::string_view raw, size_t max_bytes) {
  size_t read = std::min(raw.size(), max_bytes * 2 + 64);
  for (int k = 0; k < 3 && read > 0 && read < raw.size() &&
                  (static_cast<unsigned char>(raw[read]) & 0xC0) == 0x80;
       ++k) {
    --read;
  }
  return raw.substr(0, read);
}

}  // namespace

std::string CleanText(std::string_view raw) {
  const std::string s = core::SanitizeUtf8(raw);
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1B) {
      i = SkipEscape(s, i);
      continue;
    }
    if (c < 0x80) {
      if ((c >= 0x20 && c != 0x7F) || c == '\n' || c == '\t') out += static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t len = SequenceLength(c);
    const uint32_t cp = Decode(s, i, len);
    if (cp == 0x2028 || cp == 0x2029) {
      // LINE/PARAGRAPH SEPARATOR end a line in JavaScript (tap-parser's line regexes: a TAP
      // point or YAML block cut in two) and in YAML 1.1: they are newlines here, so every
      // writer escapes or flattens them like '\n' (docs/traps.md, trap 43).
      out += '\n';
    } else if (!Removed(cp)) {
      out.append(s, i, len);
    }
    i += len;
  }
  return out;
}

std::string BoundedText(std::string_view raw, size_t max_bytes) {
  const std::string_view prefix = ReadPrefix(raw, max_bytes);
  return CutUtf8(CleanText(prefix), max_bytes, prefix.size() < raw.size());
}

std::string BoundedUtf8(std::string_view raw, size_t max_bytes) {
  const std::string_view prefix = ReadPrefix(raw, max_bytes);
  return CutUtf8(core::SanitizeUtf8(prefix), max_bytes, prefix.size() < raw.size());
}

size_t DisplayWidth(std::string_view text) {
  size_t cols = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t len = SequenceLength(static_cast<unsigned char>(text[i]));
    cols += CodePointWidth(Decode(text, i, len));
    i += len;
  }
  return cols;
}

size_t PrefixFitting(std::string_view text, size_t cols) {
  size_t used = 0, i = 0;
  while (i < text.size()) {
    const size_t len = SequenceLength(static_cast<unsigned char>(text[i]));
    const size_t w = CodePointWidth(Decode(text, i, len));
    if (used + w > cols || i + len > text.size()) break;
    used += w;
    i += len;
  }
  return i;
}

std::string FitColumns(std::string_view text, size_t max_cols) {
  if (DisplayWidth(text) <= max_cols) return std::string(text);
  if (max_cols == 0) return "";
  return std::string(text.substr(0, PrefixFitting(text, max_cols - 1))) + std::string(kEllipsis);
}

std::string PadColumns(std::string_view text, size_t cols) {
  std::string out(text);
  const size_t w = DisplayWidth(text);
  if (w < cols) out.append(cols - w, ' ');
  return out;
}

}  // namespace sandprobe::report
