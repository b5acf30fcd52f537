// Manifest YAML -> core::Manifest. Validates the common fields and the `local`, `command` and
// `http` driver sections; other drivers' sections are passed through for their drivers to validate.
#include <fmt/format.h>

#include <cctype>

#include "config/config.h"
#include "config/yaml_util.h"

namespace sandprobe::config {
namespace {

using internal::At;

constexpr const char* kDrivers[] = {"local", "command", "docker", "kubernetes", "http"};

std::expected<void, ConfigError> LoadLimits(const std::string& file, const YAML::Node& node,
                                            core::Limits& limits) {
  if (!node.IsDefined() || node.IsNull()) return {};
  if (!node.IsMap()) return std::unexpected(At(file, node, "limits", "expected a mapping"));
  if (auto r =
          internal::OnlyKeys(file, node, "limits", {"timeout", "memory", "tmp", "pids", "output"});
      !r) {
    return r;
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = "limits." + key;
    if (!kv.second.IsScalar())
      return std::unexpected(At(file, kv.second, field, "expected a value"));
    const std::string text = kv.second.Scalar();
    if (key == "timeout") {
      auto s = core::ParseSeconds(text);
      if (!s) return std::unexpected(At(file, kv.second, field, s.error()));
      limits.timeout_s = *s;
      continue;
    }
    if (key == "pids") {
      auto n = core::ParseBytes(text);  // a plain count parses the same way
      if (!n || text.find_first_not_of("0123456789") != std::string::npos) {
        return std::unexpected(At(file, kv.second, field, "expected a whole number"));
      }
      limits.pids = *n;
      continue;
    }
    auto b = core::ParseBytes(text);
    if (!b) return std::unexpected(At(file, kv.second, field, b.error()));
    (key == "memory" ? limits.memory_bytes
     : key == "tmp"  ? limits.tmp_bytes
                     : limits.output_bytes) = *b;
  }
  return {};
}

// argv: a non-empty list of strings; with {script} in exactly one element unless stdin: true.
std::expected<void, ConfigError> CheckArgv(const std::string& file, const YAML::Node& section,
                                           const std::string& path, bool stdin_mode) {
  const YAML::Node argv = section["argv"];
  const std::string field = path + ".argv";
  if (!argv.IsDefined())
    return std::unexpected(At(file, section, field, "required field is missing"));
  if (!argv.IsSequence() || argv.size() == 0) {
    return std::unexpected(At(file, argv, field, "expected a non-empty list of strings"));
  }
  int script_slots = 0;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (!argv[i].IsScalar()) {
      return std::unexpected(
          At(file, argv[i], fmt::format("{}[{}]", field, i), "expected a string"));
    }
    if (argv[i].Scalar().find("{script}") != std::string::npos) {
      if (argv[i].Scalar() != "{script}") {
        return std::unexpected(At(file, argv[i], fmt::format("{}[{}]", field, i),
                                  "{script} must be a whole argument of its own"));
      }
      ++script_slots;
    }
  }
  if (stdin_mode && script_slots != 0) {
    return std::unexpected(At(file, argv, field, "stdin: true and {script} exclude each other"));
  }
  if (!stdin_mode && script_slots != 1) {
    return std::unexpected(
        At(file, argv, field,
           fmt::format("expected exactly one \"{{script}}\" argument (found {}), "
                       "or stdin: true",
                       script_slots)));
  }
  return {};
}

// The `http:` section (drivers/http/http_driver.h): a URL, a preset or a body + response shape,
// optional health URL, token variable name, timeout rule and durations.
std::expected<void, ConfigError> CheckHttpSection(const std::string& file, const YAML::Node& root) {
  const YAML::Node section = root["http"];
  if (!section.IsDefined())
    return std::unexpected(At(file, root, "http", "driver http needs an http: section"));
  if (!section.IsMap()) return std::unexpected(At(file, section, "http", "expected a mapping"));
  if (auto r =
          internal::OnlyKeys(file, section, "http",
                             {"url", "preset", "health", "method", "headers", "tokenEnv", "body",
                              "response", "timeout", "afterCall", "healthTimeout", "maxBody"});
      !r) {
    return r;
  }
  auto url_ok = [&](const char* key, bool required) -> std::expected<void, ConfigError> {
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
  if (auto r = url_ok("url", true); !r) return r;
  if (auto r = url_ok("health", false); !r) return r;
  const YAML::Node preset = section["preset"];
  if (preset.IsDefined() && (!preset.IsScalar() || preset.Scalar() != "code-json")) {
    return std::unexpected(At(file, preset, "http.preset", "unknown preset (known: code-json)"));
  }
  if (const YAML::Node m = section["method"]; m.IsDefined()) {
    if (!m.IsScalar() || (m.Scalar() != "POST" && m.Scalar() != "PUT" && m.Scalar() != "PATCH")) {
      return std::unexpected(At(file, m, "http.method", "expected POST, PUT or PATCH"));
    }
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
  }
  const YAML::Node body = section["body"];
  if (body.IsDefined()) {
    const std::string dumped = internal::ToJson(body).dump();
    if (!body.IsMap() && !body.IsSequence())
      return std::unexpected(At(file, body, "http.body", "expected a JSON object (a mapping)"));
    if (dumped.find("{script}") == std::string::npos) {
      return std::unexpected(
          At(file, body, "http.body", "no string holds \"{script}\": the probe would not be sent"));
    }
  } else if (!preset.IsDefined()) {
    return std::unexpected(
        At(file, section, "http.body", "give body: (with \"{script}\") or preset:"));
  }
  const YAML::Node response = section["response"];
  if (response.IsDefined()) {
    if (!response.IsMap())
      return std::unexpected(At(file, response, "http.response", "expected a mapping"));
    if (auto r = internal::OnlyKeys(file, response, "http.response",
                                    {"stdout", "stderr", "exit_code", "error"});
        !r) {
      return r;
    }
    for (const auto& kv : response) {
      const std::string field = "http.response." + kv.first.Scalar();
      if (!kv.second.IsScalar() || (!kv.second.Scalar().empty() && kv.second.Scalar()[0] != '/')) {
        return std::unexpected(
            At(file, kv.second, field, "expected a JSON pointer (RFC 6901), e.g. /stdout"));
      }
    }
  }
  if (!preset.IsDefined() && (!response.IsDefined() || !response["stdout"].IsDefined())) {
    return std::unexpected(At(file, response.IsDefined() ? response : section,
                              "http.response.stdout",
                              "required without a preset: the JSON pointer of stdout"));
  }
  if (const YAML::Node t = section["timeout"]; t.IsDefined()) {
    if (!t.IsMap()) {
      return std::unexpected(At(file, t, "http.timeout",
                                "expected {pointer: /error, contains: \"timed out\"} or "
                                "{pointer: /exit_code, equals: 124}"));
    }
    if (auto r = internal::OnlyKeys(file, t, "http.timeout", {"pointer", "contains", "equals"}); !r)
      return r;
    if (!t["pointer"].IsScalar() || t["pointer"].Scalar().empty() ||
        t["pointer"].Scalar()[0] != '/') {
      return std::unexpected(At(file, t["pointer"].IsDefined() ? t["pointer"] : t,
                                "http.timeout.pointer", "expected a JSON pointer, e.g. /error"));
    }
    if (t["contains"].IsDefined() == t["equals"].IsDefined()) {
      return std::unexpected(
          At(file, t, "http.timeout", "give exactly one of contains: or equals:"));
    }
  }
  for (const char* key : {"afterCall", "healthTimeout"}) {
    const YAML::Node d = section[key];
    if (!d.IsDefined()) continue;
    auto s = d.IsScalar()
                 ? core::ParseSeconds(d.Scalar())
                 : std::expected<double, std::string>(std::unexpected("expected a duration"));
    if (!s) return std::unexpected(At(file, d, std::string("http.") + key, s.error()));
    if (std::string_view(key) == "healthTimeout" && *s <= 0) {
      return std::unexpected(At(file, d, "http.healthTimeout",
                                "must be more than 0 s (a check needs time to answer)"));
    }
  }
  if (const YAML::Node b = section["maxBody"]; b.IsDefined()) {
    auto n = b.IsScalar()
                 ? core::ParseBytes(b.Scalar())
                 : std::expected<uint64_t, std::string>(std::unexpected("expected a size"));
    if (!n || *n == 0)
      return std::unexpected(
          At(file, b, "http.maxBody", n ? "expected a size above 0" : n.error()));
  }
  return {};
}

std::expected<void, ConfigError> CheckDriverSection(const std::string& file, const YAML::Node& root,
                                                    const std::string& driver) {
  const YAML::Node section = root[driver];
  if (driver == "local") {
    if (!section.IsDefined() || section.IsNull()) return {};
    if (!section.IsMap()) return std::unexpected(At(file, section, "local", "expected a mapping"));
    if (auto r = internal::OnlyKeys(file, section, "local", {"argv"}); !r) return r;
    if (section["argv"].IsDefined()) return CheckArgv(file, section, "local", false);
    return {};
  }
  if (driver == "command") {
    if (!section.IsDefined()) {
      return std::unexpected(At(file, root, "command", "driver command needs a command: section"));
    }
    if (!section.IsMap())
      return std::unexpected(At(file, section, "command", "expected a mapping"));
    if (auto r = internal::OnlyKeys(file, section, "command",
                                    {"argv", "stdin", "preflight", "after", "cleanup"});
        !r) {
      return r;
    }
    // Hook commands: lists of strings, never the script.
    for (const char* hook : {"preflight", "after", "cleanup"}) {
      const YAML::Node h = section[hook];
      if (!h.IsDefined()) continue;
      const std::string field = std::string("command.") + hook;
      if (!h.IsSequence() || h.size() == 0)
        return std::unexpected(At(file, h, field, "expected a non-empty list of strings"));
      for (size_t i = 0; i < h.size(); ++i) {
        if (!h[i].IsScalar() || h[i].Scalar().find("{script}") != std::string::npos) {
          return std::unexpected(At(file, h[i], fmt::format("{}[{}]", field, i),
                                    "expected a string without {script}"));
        }
      }
    }
    bool stdin_mode = false;
    if (section["stdin"].IsDefined()) {
      const std::string s = section["stdin"].Scalar();
      if (s != "true" && s != "false") {
        return std::unexpected(
            At(file, section["stdin"], "command.stdin", "expected true or false"));
      }
      stdin_mode = s == "true";
    }
    return CheckArgv(file, section, "command", stdin_mode);
  }
  if (driver == "http") return CheckHttpSection(file, root);
  return {};
}

}  // namespace

Loaded<core::Manifest> ParseManifest(const std::string& text, const std::string& source) {
  auto root = internal::ReadYaml(text, source);
  if (!root) return std::unexpected(root.error());
  const YAML::Node& y = *root;
  if (auto r = internal::OnlyKeys(source, y, "",
                                  {"name", "driver", "control", "description", "limits", "weakens",
                                   "local", "command", "docker", "kubernetes", "http"});
      !r) {
    return std::unexpected(r.error());
  }
  core::Manifest m;
  m.source_path = source;
  auto name = internal::String(source, y, "name", "", true);
  if (!name) return std::unexpected(name.error());
  m.name = *name;
  if (m.name.empty() || m.name.size() > 64 ||
      m.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
    return std::unexpected(
        At(source, y["name"], "name", "expected 1-64 characters of [a-z0-9-_.]"));
  }
  auto driver = internal::String(source, y, "driver", "", true);
  if (!driver) return std::unexpected(driver.error());
  m.driver = *driver;
  bool known = false;
  for (const char* d : kDrivers) known = known || m.driver == d;
  if (!known) {
    return std::unexpected(At(source, y["driver"], "driver",
                              fmt::format("unknown driver '{}' (expected local, command, docker, "
                                          "kubernetes or http)",
                                          m.driver)));
  }
  for (auto [key, out] : {std::pair{"control", &m.control}, {"description", &m.description}}) {
    auto v = internal::String(source, y, key, "", false);
    if (!v) return std::unexpected(v.error());
    *out = *v;
  }
  if (auto r = LoadLimits(source, y["limits"], m.limits); !r) return std::unexpected(r.error());
  if (const YAML::Node w = y["weakens"]; w.IsDefined()) {
    if (!w.IsSequence())
      return std::unexpected(At(source, w, "weakens", "expected a list of strings"));
    for (size_t i = 0; i < w.size(); ++i) {
      if (!w[i].IsScalar()) {
        return std::unexpected(
            At(source, w[i], fmt::format("weakens[{}]", i), "expected a string"));
      }
      m.weakens.push_back(w[i].Scalar());
    }
  }
  if (auto r = CheckDriverSection(source, y, m.driver); !r) return std::unexpected(r.error());
  if (y[m.driver].IsDefined()) m.driver_config = internal::ToJson(y[m.driver]);
  if (m.driver_config.is_null()) m.driver_config = nlohmann::json::object();
  return m;
}

Loaded<core::Manifest> LoadManifest(const std::filesystem::path& file) {
  auto text = internal::ReadFile(file.string());
  if (!text) return std::unexpected(text.error());
  return ParseManifest(*text, file.string());
}

}  // namespace sandprobe::config
