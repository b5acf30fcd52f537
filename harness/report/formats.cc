#include "report/formats.h"

#include <fmt/format.h>

#include <algorithm>

namespace sandprobe::report {
namespace {

template <std::string (*kRender)(const core::Matrix&)>
std::string Plain(const core::Matrix& m, const TextOptions&) {
  return kRender(m);
}

std::string Text(const core::Matrix& m, const TextOptions& options) {
  return RenderText(m, options);
}

constexpr Format kFormats[] = {
    {.name = "text", .file = "matrix.txt", .render = Text, .streamed_by_run = true},
    {.name = "markdown",
     .file = "matrix.md",
     .render = Plain<RenderMarkdown>,
     .full_file = "matrix-full.md",
     .render_full = RenderMarkdownFull},
    {.name = "json", .file = "report.json", .render = Plain<RenderJson>},
    {.name = "junit", .file = "junit.xml", .render = Plain<RenderJunit>},
    {.name = "tap", .file = "report.tap", .render = Plain<RenderTap>},
    {.name = "html", .file = "report.html", .render = Plain<RenderHtml>},
};

}  // namespace

std::span<const Format> Formats() { return kFormats; }

std::string FormatNames(std::string_view separator) {
  std::string names;
  for (const Format& f : kFormats) {
    if (!names.empty()) names += separator;
    names += f.name;
  }
  return names;
}

std::string FormatFiles(bool written_by_run) {
  std::string files;
  for (const Format& f : kFormats) {
    if (written_by_run && f.streamed_by_run) continue;
    if (!files.empty()) files += ", ";
    files += f.file;
    if (!f.full_file.empty()) files += fmt::format(" (+ {})", f.full_file);
  }
  return files;
}

std::expected<std::vector<const Format*>, std::string> ParseFormats(std::string_view comma_list) {
  std::vector<const Format*> out;
  for (size_t i = 0; i <= comma_list.size();) {
    const size_t comma = std::min(comma_list.find(',', i), comma_list.size());
    const std::string_view name = comma_list.substr(i, comma - i);
    const Format* f = std::ranges::find(kFormats, name, &Format::name);
    if (f == std::end(kFormats)) return std::unexpected(fmt::format("unknown format '{}'", name));
    if (std::ranges::find(out, f) == out.end()) out.push_back(f);
    i = comma + 1;
  }
  return out;
}

}  // namespace sandprobe::report
