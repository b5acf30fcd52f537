// The report formats, one row each: the `--format` name, the file `run --out` and `report --out`
// write, and its renderer. The `--format` checks, the help texts and the baselines' file
// extensions all come from this table: a new format is one reporter file plus one row here.
#pragma once

#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/matrix.h"
#include "report/reporters.h"

namespace sandprobe::report {

struct Format {
  std::string_view name;  // the --format value
  std::string_view file;  // the file's name under --out
  std::string (*render)(const core::Matrix&, const TextOptions&);
  // `sandprobe run` prints this format on the terminal while the run goes (TextReporter) and
  // writes no file of it; `sandprobe report` renders it like any other.
  bool streamed_by_run = false;
  // A second file beside `file`, written when its content differs from `file`'s and removed when
  // it does not (Markdown: the uncut report, matrix-full.md, beside the comment-sized matrix.md).
  std::string_view full_file = {};
  std::string (*render_full)(const core::Matrix&) = nullptr;
};

// Every format, in the order `run --out` writes them: text, markdown, json, junit, tap, html.
std::span<const Format> Formats();

// The names in table order, joined by `separator` ("text, markdown, json, junit, tap, html"), for
// help texts, errors and the default of `run --format` (separator ",").
std::string FormatNames(std::string_view separator = ", ");

// The files of every format, in table order, for help texts: "matrix.txt, matrix.md (+
// matrix-full.md), report.json, ..."; without the formats `run` streams when `written_by_run`.
std::string FormatFiles(bool written_by_run);

// The formats of a comma list ("json,text"), in its order, each once. Error: "unknown format
// 'X'" for a name not in the table (the empty name too).
std::expected<std::vector<const Format*>, std::string> ParseFormats(std::string_view comma_list);

}  // namespace sandprobe::report
