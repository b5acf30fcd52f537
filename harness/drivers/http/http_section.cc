#include "drivers/http/http_section.h"

#include <fmt/format.h>

#include <cctype>

#include "config/yaml_json.h"
#include "config/yaml_util.h"
#include "core/limits.h"

namespace sandprobe::drivers {

using config::internal::At;

namespace {

// A JSON pointer (RFC 6901) as nlohmann reads it: "/a/b", "~0" and "~1" escapes only.
bool IsJsonPointer(const std::string& text) {
  try {
    (void)nlohmann::json::json_pointer(text);
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

// The `http:` section (drivers/http/http_driver.h): a URL, a preset or a body + response shape,
// optional health URL, token variable name, timeout rule and durations. The preset's values come
// first; the section's own fields replace them (response pointers one by one).
std::expected<HttpConfig, config::ConfigError> ReadHttpSection(const std::string& file,
                                                               const YAML::Node& root) {
  const YAML::Node section = root["http"];
  if (!section.IsDefined())
    return std::unexpected(At(file, root, "http", "driver http needs an http: section"));
  if (!section.IsMap()) return std::unexpected(At(file, section, "http", "expected a mapping"));
  if (auto r = config::internal::OnlyKeys(
          file, section, "http",
          {"url", "preset", "health", "method", "headers", "tokenEnv", "body", "response",
           "timeout", "afterCall", "healthTimeout", "maxBody"});
      !r) {
    return std::unexpected(r.error());
  }
  auto url_ok = [&](const char* key, bool required) -> std::expected<void, config::ConfigError> {
    const YAML::Node u = section[key];
    const std::string field = std::string("http.") + key;
    if (!u.IsDefined()) {
      if (!required) return {};
      return std::unexpected(At(file, section, field, "required field is missing"));
    }
    if (!u.IsScalar() ||
        (!u.Scalar().starts_with("http://") && !u.Scalar().starts_with("https://")) ||
        u.Scalar().find("://") + 3 >= u.Scalar().size()) {
      return std::unexpected(At(file, u, field, "expected an http:// or https:// URL"));
    }
    // host[:port] up to the path: a port must be 1..65535.
    const std::string rest = u.Scalar().substr(u.Scalar().find("://") + 3);
    const std::string authority = rest.substr(0, rest.find('/'));
    if (authority.empty() || authority.front() == ':') {
      return std::unexpected(At(file, u, field, "expected a host after the scheme"));
    }
    if (const size_t colon = authority.rfind(':');
        colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
      const std::string port = authority.substr(colon + 1);
      const bool digits = !port.empty() && port.size() <= 5 &&
                          port.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
        return std::unexpected(At(file, u, field, "port must be a number from 1 to 65535"));
      }
    }
    return {};
  };
  if (auto r = url_ok("url", true); !r) return std::unexpected(r.error());
  if (auto r = url_ok("health", false); !r) return std::unexpected(r.error());
  HttpConfig c;
  c.url = section["url"].Scalar();
  if (section["health"].IsDefined()) c.health = section["health"].Scalar();
  const YAML::Node preset = section["preset"];
  if (preset.IsDefined()) {
    if (!preset.IsScalar() || !HttpPresets().contains(preset.Scalar())) {
      return std::unexpected(At(file, preset, "http.preset", "unknown preset (known: code-json)"));
    }
    const nlohmann::json& p = HttpPresets()[preset.Scalar()];
    c.body = p["body"];
    c.stdout_ptr = p["response"].value("stdout", "");
    c.stderr_ptr = p["response"].value("stderr", "");
    c.exit_code_ptr = p["response"].value("exit_code", "");
    c.error_ptr = p["response"].value("error", "");
    HttpTimeoutRule rule{
        .pointer = p["timeout"]["pointer"].get<std::string>(), .contains = {}, .equals = {}};
    if (p["timeout"].contains("contains"))
      rule.contains = p["timeout"]["contains"].get<std::string>();
    if (p["timeout"].contains("equals")) rule.equals = p["timeout"]["equals"];
    c.timeout = rule;
  }
  if (const YAML::Node m = section["method"]; m.IsDefined()) {
    if (!m.IsScalar() || (m.Scalar() != "POST" && m.Scalar() != "PUT" && m.Scalar() != "PATCH")) {
      return std::unexpected(At(file, m, "http.method", "expected POST, PUT or PATCH"));
    }
    c.method = m.Scalar();
  }
  if (const YAML::Node h = section["headers"]; h.IsDefined()) {
    if (!h.IsMap()) return std::unexpected(At(file, h, "http.headers", "expected a mapping"));
    for (const auto& kv : h) {
      const std::string field = "http.headers." + kv.first.Scalar();
      if (!kv.second.IsScalar())
        return std::unexpected(At(file, kv.second, field, "expected a string"));
      std::string lower = kv.first.Scalar();
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "authorization") {
        return std::unexpected(At(file, kv.first, field,
                                  "never put a credential in a manifest: name the variable that "
                                  "holds it with tokenEnv:"));
      }
      c.headers.emplace_back(kv.first.Scalar(), kv.second.Scalar());
    }
  }
  if (const YAML::Node t = section["tokenEnv"]; t.IsDefined()) {
    if (!t.IsScalar() || t.Scalar().empty() ||
        t.Scalar().find_first_not_of(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
            std::string::npos ||
        std::isdigit(static_cast<unsigned char>(t.Scalar()[0]))) {
      return std::unexpected(
          At(file, t, "http.tokenEnv", "expected the NAME of an environment variable"));
    }
    c.token_env = t.Scalar();
  }
  const YAML::Node body = section["body"];
  if (body.IsDefined()) {
    const std::string dumped = config::YamlToJson(body).dump();
    if (!body.IsMap() && !body.IsSequence())
      return std::unexpected(At(file, body, "http.body", "expected a JSON object (a mapping)"));
    if (dumped.find("{script}") == std::string::npos) {
      return std::unexpected(
          At(file, body, "http.body", "no string holds \"{script}\": the probe would not be sent"));
    }
    c.body = config::YamlToJson(body);
  } else if (!preset.IsDefined()) {
    return std::unexpected(
        At(file, section, "http.body", "give body: (with \"{script}\") or preset:"));
  }
  const YAML::Node response = section["response"];
  if (response.IsDefined()) {
    if (!response.IsMap())
      return std::unexpected(At(file, response, "http.response", "expected a mapping"));
    if (auto r = config::internal::OnlyKeys(file, response, "http.response",
                                            {"stdout", "stderr", "exit_code", "error"});
        !r) {
      return std::unexpected(r.error());
    }
    for (const auto& kv : response) {
      const std::string field = "http.response." + kv.first.Scalar();
      if (!kv.second.IsScalar() || (!kv.second.Scalar().empty() && kv.second.Scalar()[0] != '/') ||
          !IsJsonPointer(kv.second.Scalar())) {
        return std::unexpected(
            At(file, kv.second, field, "expected a JSON pointer (RFC 6901), e.g. /stdout"));
      }
      const std::string& key = kv.first.Scalar();
      std::string& out = key == "stdout"   ? c.stdout_ptr
                         : key == "stderr" ? c.stderr_ptr
                         : key == "error"  ? c.error_ptr
                                           : c.exit_code_ptr;
      out = kv.second.Scalar();
    }
  }
  if (c.stdout_ptr.empty()) {
    return std::unexpected(
        At(file, response.IsDefined() ? response : section, "http.response.stdout",
           preset.IsDefined() ? "empty: stdout is the one pointer a probe cannot do without"
                              : "required without a preset: the JSON pointer of stdout"));
  }
  if (const YAML::Node t = section["timeout"]; t.IsDefined()) {
    if (!t.IsMap()) {
      return std::unexpected(At(file, t, "http.timeout",
                                "expected {pointer: /error, contains: \"timed out\"} or "
                                "{pointer: /exit_code, equals: 124}"));
    }
    if (auto r =
            config::internal::OnlyKeys(file, t, "http.timeout", {"pointer", "contains", "equals"});
        !r)
      return std::unexpected(r.error());
    if (!t["pointer"].IsScalar() || t["pointer"].Scalar().empty() ||
        t["pointer"].Scalar()[0] != '/' || !IsJsonPointer(t["pointer"].Scalar())) {
      return std::unexpected(At(file, t["pointer"].IsDefined() ? t["pointer"] : t,
                                "http.timeout.pointer", "expected a JSON pointer, e.g. /error"));
    }
    if (t["contains"].IsDefined() == t["equals"].IsDefined()) {
      return std::unexpected(
          At(file, t, "http.timeout", "give exactly one of contains: or equals:"));
    }
    HttpTimeoutRule rule{.pointer = t["pointer"].Scalar(), .contains = {}, .equals = {}};
    if (const YAML::Node text = t["contains"]; text.IsDefined()) {
      if (!text.IsScalar() || !config::YamlToJson(text).is_string()) {
        return std::unexpected(At(file, text, "http.timeout.contains",
                                  "expected a string (for a number or true/false: equals:)"));
      }
      rule.contains = text.Scalar();
    } else {
      rule.equals = config::YamlToJson(t["equals"]);
    }
    c.timeout = std::move(rule);  // a whole rule replaces the preset's
  }
  for (const char* key : {"afterCall", "healthTimeout"}) {
    const YAML::Node d = section[key];
    if (!d.IsDefined()) continue;
    auto s = d.IsScalar()
                 ? core::ParseSeconds(d.Scalar())
                 : std::expected<double, std::string>(std::unexpected("expected a duration"));
    if (!s) return std::unexpected(At(file, d, std::string("http.") + key, s.error()));
    if (std::string_view(key) == "healthTimeout") {
      if (*s <= 0) {
        return std::unexpected(At(file, d, "http.healthTimeout",
                                  "must be more than 0 s (a check needs time to answer)"));
      }
      c.health_timeout_s = *s;
    } else {
      c.after_call_s = *s;
    }
  }
  if (const YAML::Node b = section["maxBody"]; b.IsDefined()) {
    auto n = b.IsScalar()
                 ? core::ParseBytes(b.Scalar())
                 : std::expected<uint64_t, std::string>(std::unexpected("expected a size"));
    if (!n || *n == 0)
      return std::unexpected(
          At(file, b, "http.maxBody", n ? "expected a size above 0" : n.error()));
    c.max_body = *n;
  }
  return c;
}

}  // namespace sandprobe::drivers
