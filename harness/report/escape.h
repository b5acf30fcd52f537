// The one writer per output format for untrusted text (anything from an Observation, reasons
// built from probe output, harness errors, arm/manifest/probe/run names). Reporters hand every
// such string to these and write only their own fixed markup directly. All of them bound their
// input first, so hostile sizes cost O(bound). See text_clean.h for what "cleaned" removes.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sandprobe::report {

// Terminal: one line of cleaned text (newlines and tabs as spaces), at most max_cols display
// columns, "…" when cut. No escape sequence from the input survives.
std::string TerminalText(std::string_view raw, size_t max_cols);

// Markdown (GitHub-flavoured) document builder. Markup() is for the reporter's own fixed syntax;
// everything else goes through Text(), HtmlText() or CodeBlock(), which clean and bound it.
class MarkdownWriter {
 public:
  // Trusted markup written verbatim (the reporter's own table pipes, headings, emphasis).
  MarkdownWriter& Markup(std::string_view markup);
  // Untrusted text in an inline context (table cell, list item, heading): cleaned, on one line,
  // at most max_bytes before escaping; \ ` * _ [ ] ~ backslash-escaped, | < > & as entities
  // (so a raw '|' never appears: a table row always has exactly its own pipes).
  MarkdownWriter& Text(std::string_view raw, size_t max_bytes = 1024);
  // Untrusted text inside raw HTML (e.g. <summary>), where backslash escapes do not apply:
  // cleaned, one line, bounded, and every Markdown or HTML special character as an entity.
  MarkdownWriter& HtmlText(std::string_view raw, size_t max_bytes = 1024);
  // Untrusted text as a fenced code block (cleaned, newlines kept, at most max_bytes), with a
  // fence longer than any backtick run in the text (at least ```), on lines of its own.
  MarkdownWriter& CodeBlock(std::string_view raw, size_t max_bytes, std::string_view info = "text");

  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// XML 1.0 text node content: cleaned (no character XML 1.0 forbids survives) and bounded. pugixml
// escapes & < > when saving, so "]]>" is written as "]]&gt;". This is the one helper every string
// passes through before it is handed to pugixml.
std::string XmlText(std::string_view raw, size_t max_bytes);
// XML attribute value: XmlText on one line (newlines and tabs as spaces).
std::string XmlAttr(std::string_view raw, size_t max_bytes);

// report.json string: valid UTF-8 (invalid bytes as U+FFFD), bounded; control characters are kept
// (the JSON serializer escapes them as \u00XX): the JSON is evidence, consumers escape for display.
std::string JsonText(std::string_view raw, size_t max_bytes);
// A JSON value from a sandbox (a record, driver facts) as-is when its compact dump fits max_bytes,
// else {"truncated": true, "bytes": <dump size>, "excerpt": "<first bytes of the dump>"}.
nlohmann::ordered_json JsonBounded(const nlohmann::json& value, size_t max_bytes);

// TAP 14 (testanything.org, "Escaping"): a test point description, directive reason or comment:
// cleaned, on one line, at most max_bytes before escaping, every '\' and '#' backslash-escaped so
// no text from a sandbox can start a directive (# SKIP / # TODO) or end a description early.
std::string TapText(std::string_view raw, size_t max_bytes);
// A YAML 1.2 double-quoted scalar for a TAP diagnostics block: cleaned (so every character is
// YAML-printable), bounded, quoted and escaped with the JSON string syntax, which YAML 1.2 reads as
// the same string. One line: a newline inside becomes "\n", so "  ..." can never end the block.
std::string YamlQuoted(std::string_view raw, size_t max_bytes);

// HTML text node content: cleaned, bounded, newlines kept, & < > " ' as entities.
std::string HtmlBody(std::string_view raw, size_t max_bytes);
// HTML double-quoted attribute value: HtmlBody on one line (newlines and tabs as spaces).
std::string HtmlAttr(std::string_view raw, size_t max_bytes);

}  // namespace sandprobe::report
