// report.json -> core::Matrix: the saved run read back, so `sandprobe report` can re-render any
// format and `sandprobe diff` can compare two runs (docs/design.md "Re-rendering and diff").
// The JSON is the source of truth: a re-render of a real run's report.json reproduces its
// matrix.md and junit.xml byte for byte. nlohmann/json's exceptions stop here.
//
// What report.json does not carry, and so a re-read matrix does not have: every record (only
// records_count and the last progress record: `records` is rebuilt as records_count entries, null
// except the last progress record at the end, which is all the reporters read), raw output past
// the 4 KiB excerpts, and values past the JSON bounds (16 KiB records, 64 KiB driver facts), which
// come back in their {truncated, bytes, excerpt} form. Row categories are not rendered, not kept.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/matrix.h"

namespace sandprobe::config {

// Reads report.json text (schema_version 1 to 3; reports/schema/report.schema.json). Errors name
// `source` and the JSON path of the first bad field, e.g. "run.json: /verdicts/3/verdict:
// expected one of PASS, FAIL, INCONCLUSIVE, SKIP, ERROR".
std::expected<core::Matrix, std::string> ParseReportJson(std::string_view text,
                                                         const std::string& source);
// Reads the file (at most 512 MiB) and parses it.
std::expected<core::Matrix, std::string> LoadReportJson(const std::filesystem::path& file);

}  // namespace sandprobe::config
