#include "drivers/kubernetes/names.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdint>

namespace sandprobe::drivers::kube {
namespace {

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool LowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// apimachinery's qualifiedNameFmt: ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63.
bool IsNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

constexpr char kValueRule[] =
    "at most 63 characters of A-Z a-z 0-9 - _ ., starting and ending with a letter or digit";

std::expected<void, std::string> CheckValue(std::string_view req, std::string_view value) {
  if (IsLabelValue(value)) return {};
  return std::unexpected(
      fmt::format("requirement \"{}\": \"{}\" is not a label value ({})", req, value, kValueRule));
}

std::expected<void, std::string> CheckRequirement(std::string_view raw) {
  const std::string_view req = Trim(raw);
  if (req.empty()) return std::unexpected("an empty requirement (two commas, or one at an end)");
  if (req.front() == '!') {
    const std::string_view key = Trim(req.substr(1));
    if (IsLabelKey(key)) return {};
    return std::unexpected(
        fmt::format("requirement \"{}\": \"{}\" is not a label key ([prefix/]name, the name {})",
                    req, key, kValueRule));
  }
  size_t i = 0;
  while (i < req.size() && (Alnum(req[i]) || std::string_view("-_./").contains(req[i]))) ++i;
  const std::string_view key = req.substr(0, i);
  if (!IsLabelKey(key)) {
    return std::unexpected(
        fmt::format("requirement \"{}\": {} is not a label key ([prefix/]name, the name {})", req,
                    key.empty() ? std::string("it does not start with a key, so it")
                                : fmt::format("\"{}\"", key),
                    kValueRule));
  }
  const std::string_view rest = Trim(req.substr(i));
  if (rest.empty()) return {};  // the key exists
  if (rest.starts_with("!=") || rest.starts_with("=="))
    return CheckValue(req, Trim(rest.substr(2)));
  if (rest.starts_with("=")) return CheckValue(req, Trim(rest.substr(1)));
  if (rest.starts_with(">") || rest.starts_with("<")) {
    const std::string_view n = Trim(rest.substr(1));
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (n.empty() || ec != std::errc() || ptr != n.data() + n.size()) {
      return std::unexpected(
          fmt::format("requirement \"{}\": {} needs a whole number, not \"{}\"", req, rest[0], n));
    }
    return {};
  }
  for (std::string_view op : {"notin", "in"}) {
    if (!rest.starts_with(op)) continue;
    const std::string_view set = Trim(rest.substr(op.size()));
    if (set.size() < 2 || set.front() != '(' || set.back() != ')' ||
        (rest.size() > op.size() && !std::isspace(static_cast<unsigned char>(rest[op.size()])) &&
         rest[op.size()] != '(')) {
      break;
    }
    std::string_view values = set.substr(1, set.size() - 2);
    while (true) {
      const size_t comma = values.find(',');
      if (auto r = CheckValue(req, Trim(values.substr(0, comma))); !r) return r;
      if (comma == std::string_view::npos) break;
      values.remove_prefix(comma + 1);
    }
    return {};
  }
  return std::unexpected(fmt::format(
      "requirement \"{}\": after the key expected =, ==, !=, in (...), notin (...), > or <", req));
}

}  // namespace

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63 || !LowerAlnum(s.front()) || !LowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!LowerAlnum(c) && c != '-') return false;
  }
  return true;
}

bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  while (true) {
    const size_t dot = s.find('.');
    if (!IsDnsLabel(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}

bool IsLabelKey(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) return IsNamePart(s);
  return IsDnsSubdomain(s.substr(0, slash)) && IsNamePart(s.substr(slash + 1));
}

bool IsLabelValue(std::string_view s) { return s.empty() || IsNamePart(s); }

std::expected<void, std::string> CheckLabelSelector(std::string_view selector) {
  if (Trim(selector).empty()) return std::unexpected("an empty selector");
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= selector.size(); ++i) {
    const char c = i < selector.size() ? selector[i] : ',';
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return std::unexpected("a ')' without its '('");
    if (c != ',' || depth > 0) continue;
    if (auto r = CheckRequirement(selector.substr(start, i - start)); !r) return r;
    start = i + 1;
  }
  if (depth > 0) return std::unexpected("a '(' without its ')'");
  return {};
}

}  // namespace sandprobe::drivers::kube
