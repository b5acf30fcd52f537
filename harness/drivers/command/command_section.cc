#include "drivers/command/command_section.h"

#include <fmt/format.h>

#include "config/yaml_util.h"

namespace sandprobe::drivers {

using config::internal::At;

std::expected<void, config::ConfigError> CheckArgv(const std::string& file,
                                                   const YAML::Node& section,
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

std::expected<bool, config::ConfigError> CheckBool(const std::string& file,
                                                   const YAML::Node& section,
                                                   const std::string& path, const char* key) {
  if (!section[key].IsDefined()) return false;
  const YAML::Node n = section[key];
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  // A YAML boolean only: a quoted "true" is a string the driver would choke on.
  if ((s != "true" && s != "false") || n.Tag() == "!") {
    return std::unexpected(At(file, n, path + "." + key, "expected true or false"));
  }
  return s == "true";
}

std::expected<void, config::ConfigError> CheckLocalSection(const std::string& file,
                                                           const YAML::Node& root) {
  const YAML::Node section = root["local"];
  if (!section.IsDefined() || section.IsNull()) return {};
  if (!section.IsMap()) return std::unexpected(At(file, section, "local", "expected a mapping"));
  if (auto r = config::internal::OnlyKeys(file, section, "local", {"argv", "tty"}); !r) return r;
  if (auto tty = CheckBool(file, section, "local", "tty"); !tty)
    return std::unexpected(tty.error());
  if (section["argv"].IsDefined()) return CheckArgv(file, section, "local", false);
  return {};
}

std::expected<void, config::ConfigError> CheckCommandSection(const std::string& file,
                                                             const YAML::Node& root) {
  const YAML::Node section = root["command"];
  if (!section.IsDefined()) {
    return std::unexpected(At(file, root, "command", "driver command needs a command: section"));
  }
  if (!section.IsMap()) return std::unexpected(At(file, section, "command", "expected a mapping"));
  if (auto r = config::internal::OnlyKeys(
          file, section, "command", {"argv", "stdin", "tty", "preflight", "after", "cleanup"});
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
        return std::unexpected(
            At(file, h[i], fmt::format("{}[{}]", field, i), "expected a string without {script}"));
      }
    }
  }
  auto stdin_mode = CheckBool(file, section, "command", "stdin");
  if (!stdin_mode) return std::unexpected(stdin_mode.error());
  auto tty = CheckBool(file, section, "command", "tty");
  if (!tty) return std::unexpected(tty.error());
  if (*tty && *stdin_mode) {
    return std::unexpected(At(file, section["tty"], "command.tty",
                              "tty: true and stdin: true exclude each other (the terminal is "
                              "the sandbox's stdin)"));
  }
  return CheckArgv(file, section, "command", *stdin_mode);
}

namespace {

std::vector<std::string> Strings(const nlohmann::json& list) {
  std::vector<std::string> out;
  for (const auto& a : list) out.push_back(a.is_string() ? a.get<std::string>() : a.dump());
  return out;
}

}  // namespace

CommandConfig CommandConfigFrom(const nlohmann::json& section,
                                std::vector<std::string> fallback_argv) {
  CommandConfig config;
  const bool object = section.is_object();
  config.argv = object && section.contains("argv") && section["argv"].is_array()
                    ? Strings(section["argv"])
                    : std::move(fallback_argv);
  if (!object) return config;
  config.stdin_mode = section.value("stdin", false);
  config.tty = section.value("tty", false);
  for (auto [key, out] : {std::pair{"preflight", &config.preflight},
                          {"after", &config.after},
                          {"cleanup", &config.cleanup}}) {
    if (section.contains(key) && section[key].is_array()) *out = Strings(section[key]);
  }
  return config;
}

}  // namespace sandprobe::drivers
