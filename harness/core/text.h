// Bounding untrusted text (probe output, API error bodies) before it enters a reason, a note or a
// report. The one UTF-8 cutter and the one `OneLine` of the harness.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandprobe::core {

// Bytes of the longest prefix of valid UTF-8 `text` that is at most max_bytes long and ends on a
// code point boundary (a cut never splits a sequence).
size_t Utf8PrefixBytes(std::string_view text, size_t max_bytes);

// At most max_bytes of s, cut on a UTF-8 boundary, with "…" (3 bytes) appended when cut, beyond
// max_bytes: for reasons and notes. Input must already be valid UTF-8 (see SanitizeUtf8).
std::string Bounded(std::string_view s, size_t max_bytes);

// At most max_bytes bytes of valid UTF-8 `text`, cut on a code point boundary with "…" (3 bytes)
// appended when cut, the "…" counted toward max_bytes: for report fields with a hard size.
// `force_ellipsis` appends "…" even when the text fits (the caller already cut it).
std::string CutUtf8(std::string_view text, size_t max_bytes, bool force_ellipsis = false);

// `text` (any bytes) on one line: valid UTF-8 (SanitizeUtf8), every C0 control and DEL replaced
// by a space, trailing spaces dropped when `trim_end`, then Bounded(…, max_bytes). Reads at most
// max_bytes + 60 bytes of `text`, so a 10 MB body costs O(max_bytes); "…" marks any cut.
std::string OneLine(std::string_view text, size_t max_bytes = std::string::npos,
                    bool trim_end = false);

}  // namespace sandprobe::core
