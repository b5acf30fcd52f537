// Streaming collector for a probe's stdout/stderr: extracts nonce-tagged records line by line
// and keeps a bounded, UTF-8-clean head of the raw text. Pure: callers feed bytes.
//
// Record line format (see probes/lib/preamble.py):  "@@sandprobe <nonce> <json object>\n"
// Lines without the marker and this run's nonce are raw output only, never evidence.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/observation.h"

namespace sandprobe::core {

inline constexpr std::string_view kRecordMarker = "@@sandprobe";

// Parses one line (without its newline). Returns the record when the line carries the marker, the
// exact nonce and a JSON object with a string "kind"; nullopt otherwise.
std::optional<nlohmann::json> ParseRecordLine(std::string_view line, std::string_view nonce);

// Replaces invalid UTF-8 sequences with U+FFFD so every later writer gets valid text.
std::string SanitizeUtf8(std::string_view bytes);

struct OutputBounds {
  size_t head_bytes = 64 * 1024;  // raw text kept per stream
  size_t max_line = 64 * 1024;    // longer stdout lines are not parsed as records
  size_t max_records = 2000;      // records kept; a "result" is always kept
};

class OutputCollector {
 public:
  OutputCollector(std::string nonce, OutputBounds bounds = {});
  void FeedStdout(std::string_view bytes);
  void FeedStderr(std::string_view bytes);
  // Flushes a final unterminated line and moves records and heads into `obs`.
  void Finish(Observation& obs);

 private:
  void TakeLine(std::string_view line);

  std::string nonce_;
  OutputBounds bounds_;
  std::string line_;
  bool line_overflow_ = false;
  std::string stdout_raw_, stderr_raw_;
  uint64_t stdout_bytes_ = 0, stderr_bytes_ = 0;
  std::vector<nlohmann::json> records_;
  std::optional<nlohmann::json> result_;
  size_t dropped_ = 0, foreign_ = 0;
};

}  // namespace sandprobe::core
