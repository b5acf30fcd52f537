// Bounding untrusted text (probe output, API error bodies) before it enters a reason or report.
#pragma once

#include <string>
#include <string_view>

namespace sandprobe::core {

// At most max_bytes of s, cut on a UTF-8 boundary, with "…" appended when cut. Input must
// already be valid UTF-8 (see SanitizeUtf8).
std::string Bounded(std::string_view s, size_t max_bytes);

}  // namespace sandprobe::core
