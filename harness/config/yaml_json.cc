#include "config/yaml_json.h"

#include <charconv>
#include <cstdint>
#include <regex>
#include <string_view>

#include "config/yaml_util.h"

namespace sandprobe::config {
namespace {

using Json = nlohmann::json;

bool OneOf(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (s == w) return true;
  }
  return false;
}

// Digits in `base` -> an integer JSON value; a string when it does not fit 64 bits.
Json Integer(const std::string& text, std::string_view digits, bool negative, int base) {
  uint64_t magnitude = 0;
  const auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (ec != std::errc() || end != digits.data() + digits.size()) return text;
  if (!negative) {
    if (magnitude <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(magnitude);
    return magnitude;
  }
  if (magnitude <= static_cast<uint64_t>(INT64_MAX)) return -static_cast<int64_t>(magnitude);
  if (magnitude == static_cast<uint64_t>(INT64_MAX) + 1) return INT64_MIN;
  return text;
}

bool AllOf(std::string_view s, std::string_view chars) {
  return !s.empty() && s.find_first_not_of(chars) == std::string_view::npos;
}

// A plain (untagged, unquoted) scalar by the YAML 1.2 core schema. No std::regex on the scalar
// itself: libstdc++'s matcher recurses per character and a long digit run overflows the stack.
Json Plain(const std::string& s) {
  if (OneOf(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (OneOf(s, {"true", "True", "TRUE"})) return true;
  if (OneOf(s, {"false", "False", "FALSE"})) return false;
  constexpr std::string_view kDigits = "0123456789";
  const bool sign = s[0] == '-' || s[0] == '+';
  const std::string_view unsigned_part = std::string_view(s).substr(sign ? 1 : 0);
  if (AllOf(unsigned_part, kDigits)) {
    // [-+]?[0-9]+ is decimal in the core schema, leading zeros included (0644 is 644).
    return Integer(s, unsigned_part, s[0] == '-', 10);
  }
  if (s.starts_with("0o") && AllOf(std::string_view(s).substr(2), "01234567")) {
    return Integer(s, std::string_view(s).substr(2), false, 8);
  }
  if (s.starts_with("0x") && AllOf(std::string_view(s).substr(2), "0123456789abcdefABCDEF")) {
    return Integer(s, std::string_view(s).substr(2), false, 16);
  }
  // [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, bounded before the regex runs.
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (s.size() <= 64 && AllOf(s, "0123456789+-.eE") && std::regex_match(s, kFloat)) {
    const size_t skip = s[0] == '+' ? 1 : 0;  // from_chars takes no '+'
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data() + skip, s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size()) return v;
  }
  return s;
}

}  // namespace

Json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      Json arr = Json::array();
      for (const auto& child : node) arr.push_back(YamlToJson(child));
      return arr;
    }
    case YAML::NodeType::Map: {
      Json obj = Json::object();
      for (const auto& kv : node) {
        obj[kv.first.IsScalar() ? kv.first.Scalar() : ""] = YamlToJson(kv.second);
      }
      return obj;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& tag = node.Tag();
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return node.Scalar();  // quoted or !!str
  return Plain(node.Scalar());
}

Loaded<Json> YamlToJson(const std::string& text, const std::string& source) {
  auto root = internal::ReadYaml(text, source);
  if (!root) return std::unexpected(root.error());
  return YamlToJson(*root);
}

}  // namespace sandprobe::config
