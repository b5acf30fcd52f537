#include "report/escape.h"

#include <algorithm>

#include "report/text_clean.h"

namespace sandprobe::report {
namespace {

// Every character with a meaning in inline Markdown or HTML, as an entity or a backslash escape.
void AppendInlineEscaped(std::string& out, std::string_view text, bool html_context) {
  for (const char c : text) {
    switch (c) {
      case '|':
        out += "&#124;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '~':
        if (html_context) {
          out += "&#" + std::to_string(static_cast<int>(c)) + ";";
        } else {
          out += '\\';
          out += c;
        }
        break;
      default:
        out += c;
    }
  }
}

size_t LongestBacktickRun(std::string_view text) {
  size_t longest = 0, run = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

}  // namespace

std::string TerminalText(std::string_view raw, size_t max_cols) {
  // A display column is at most 4 bytes of UTF-8; read a little more so "…" marks real cuts.
  return FitColumns(OneLine(BoundedText(raw, max_cols * 4 + 8)), max_cols);
}

MarkdownWriter& MarkdownWriter::Markup(std::string_view markup) {
  out_ += markup;
  return *this;
}

MarkdownWriter& MarkdownWriter::Text(std::string_view raw, size_t max_bytes) {
  AppendInlineEscaped(out_, OneLine(BoundedText(raw, max_bytes)), /*html_context=*/false);
  return *this;
}

MarkdownWriter& MarkdownWriter::HtmlText(std::string_view raw, size_t max_bytes) {
  AppendInlineEscaped(out_, OneLine(BoundedText(raw, max_bytes)), /*html_context=*/true);
  return *this;
}

MarkdownWriter& MarkdownWriter::CodeBlock(std::string_view raw, size_t max_bytes,
                                          std::string_view info) {
  const std::string body = BoundedText(raw, max_bytes);
  const std::string fence(std::max<size_t>(3, LongestBacktickRun(body) + 1), '`');
  if (!out_.empty() && out_.back() != '\n') out_ += '\n';
  out_ += fence;
  out_ += info;
  out_ += '\n';
  out_ += body;
  if (!body.empty() && body.back() != '\n') out_ += '\n';
  out_ += fence;
  out_ += '\n';
  return *this;
}

std::string XmlText(std::string_view raw, size_t max_bytes) { return BoundedText(raw, max_bytes); }

std::string XmlAttr(std::string_view raw, size_t max_bytes) {
  return OneLine(XmlText(raw, max_bytes));
}

std::string JsonText(std::string_view raw, size_t max_bytes) { return BoundedUtf8(raw, max_bytes); }

nlohmann::ordered_json JsonBounded(const nlohmann::json& value, size_t max_bytes) {
  const std::string dumped = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (dumped.size() <= max_bytes) return nlohmann::ordered_json(value);
  nlohmann::ordered_json out;
  out["truncated"] = true;
  out["bytes"] = dumped.size();
  out["excerpt"] = CutUtf8(dumped, max_bytes);
  return out;
}

std::string TapText(std::string_view raw, size_t max_bytes) {
  std::string out;
  for (const char c : OneLine(BoundedText(raw, max_bytes))) {
    if (c == '\\' || c == '#') out += '\\';
    out += c;
  }
  return out;
}

std::string YamlQuoted(std::string_view raw, size_t max_bytes) {
  return nlohmann::json(BoundedText(raw, max_bytes)).dump();
}

std::string HtmlBody(std::string_view raw, size_t max_bytes) {
  std::string out;
  for (const char c : BoundedText(raw, max_bytes)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string HtmlAttr(std::string_view raw, size_t max_bytes) {
  return OneLine(HtmlBody(raw, max_bytes));
}

}  // namespace sandprobe::report
