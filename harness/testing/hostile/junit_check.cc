// junit_check FILE: reads a JUnit XML report with pugixml (the hostile output corpus;
// docs/design.md "Hostile output corpus") and prints one JSON object:
//   {"ok": bool, "error": "...", "suites": {suite: {testcase name: "ok"|"failure"|"error"|
//    "skipped"}}, "bad_chars": [...]}
// Besides the parse, every element name, attribute value and text (after entity decoding) must
// hold only XML 1.0 characters (#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
// [#x10000-#x10FFFF], as valid UTF-8): pugixml itself accepts control characters and `&#1;`,
// which stricter consumers (expat, Java's SAX, the CI's test view) reject.
// Exit 0 when ok, 1 when not, 2 when the file cannot be read.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <string>
#include <string_view>

namespace {

// Returns an empty string when `s` is valid UTF-8 made of XML 1.0 characters, else a description.
std::string BadXmlChar(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    size_t len = 0;
    if (c < 0x80) {
      cp = c, len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F, len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F, len = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07, len = 4;
    } else {
      return "invalid UTF-8 lead byte at " + std::to_string(i);
    }
    if (i + len > s.size()) return "truncated UTF-8 at " + std::to_string(i);
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return "invalid UTF-8 continuation at " + std::to_string(i);
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len]) return "overlong UTF-8 at " + std::to_string(i);
    const bool ok = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
                    (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
    if (!ok) {
      char name[16];
      std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(cp));
      return "character " + std::string(name) + " at " + std::to_string(i);
    }
    i += len;
  }
  return "";
}

void CheckNode(const pugi::xml_node& node, nlohmann::json& bad) {
  auto check = [&](std::string_view what, const char* value) {
    if (auto why = BadXmlChar(value); !why.empty()) {
      bad.push_back(std::string(what) + " in <" + node.name() + ">: " + why);
    }
  };
  check("name", node.name());
  check("value", node.value());
  for (const auto& attr : node.attributes()) check(attr.name(), attr.value());
  for (const auto& child : node.children()) CheckNode(child, bad);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: junit_check FILE\n", stderr);
    return 2;
  }
  pugi::xml_document doc;
  const auto parsed = doc.load_file(argv[1], pugi::parse_default | pugi::parse_ws_pcdata_single);
  nlohmann::json out = {
      {"ok", false}, {"suites", nlohmann::json::object()}, {"bad_chars", nlohmann::json::array()}};
  if (parsed.status == pugi::status_file_not_found || parsed.status == pugi::status_io_error) {
    std::fprintf(stderr, "junit_check: cannot read %s\n", argv[1]);
    return 2;
  }
  if (!parsed) {
    out["error"] =
        std::string(parsed.description()) + " at offset " + std::to_string(parsed.offset);
    std::puts(out.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace).c_str());
    return 1;
  }
  CheckNode(doc, out["bad_chars"]);
  const auto root = doc.child("testsuites");
  if (!root) out["error"] = "root element is not <testsuites>";
  for (const auto& suite : root.children("testsuite")) {
    auto& cases = out["suites"][suite.attribute("name").value()];
    cases = nlohmann::json::object();
    for (const auto& tc : suite.children("testcase")) {
      std::string kind = "ok";
      for (const char* k : {"failure", "error", "skipped"}) {
        if (tc.child(k)) kind = k;
      }
      cases[tc.attribute("name").value()] = kind;
    }
  }
  out["ok"] = !out.contains("error") && out["bad_chars"].empty();
  std::puts(out.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace).c_str());
  return out["ok"].get<bool>() ? 0 : 1;
}
