// Cleaning, bounding and measuring untrusted text before any format-specific escaping. The
// per-format writers (escape.h) are built on these; reporters call the writers, not these.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/text.h"

namespace sandprobe::report {

// `raw` (any bytes) as valid UTF-8 that is safe to display: invalid sequences become U+FFFD
// (core::SanitizeUtf8), then these are removed: ANSI/ECMA-48 escape sequences (CSI "ESC[…m",
// OSC/DCS/APC/PM/SOS strings up to BEL, ESC\ or a newline, two-byte ESC sequences), C0 controls
// other than '\n' and '\t' (so NUL, BEL, CR, ESC), DEL, C1 controls (U+0080..U+009F), bidi
// embedding/override/isolate controls (U+202A..U+202E, U+2066..U+2069, "Trojan Source") and the
// XML 1.0 non-characters U+FFFE/U+FFFF; U+2028/U+2029 (line and paragraph separators) become
// '\n'. The result is valid in XML 1.0 text.
std::string CleanText(std::string_view raw);

// The harness's one UTF-8 cutter and one-line folding (core/text.h), used by every writer here.
using core::CutUtf8;
using core::OneLine;

// CutUtf8(CleanText(raw), max_bytes), reading only a prefix of raw proportional to max_bytes,
// so a 10 MB input costs O(max_bytes). "…" marks any cut, including the prefix cut.
std::string BoundedText(std::string_view raw, size_t max_bytes);

// Same bounding without cleaning: valid UTF-8 (U+FFFD for invalid bytes), controls kept.
std::string BoundedUtf8(std::string_view raw, size_t max_bytes);

// Terminal display columns of valid UTF-8 text: combining marks and zero-width characters 0,
// East Asian wide and emoji ranges 2, everything else 1 (tab and newline count 1).
size_t DisplayWidth(std::string_view text);

// Bytes of the longest prefix of `text` (whole code points) that fits in `cols` columns.
size_t PrefixFitting(std::string_view text, size_t cols);

// `text` cut to at most max_cols display columns, ending in "…" when cut.
std::string FitColumns(std::string_view text, size_t max_cols);

// `text` padded with spaces to at least `cols` display columns.
std::string PadColumns(std::string_view text, size_t cols);

}  // namespace sandprobe::report
