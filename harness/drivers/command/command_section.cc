#include "drivers/command/command_section.h"

#include <fmt/format.h>

#include "config/yaml_util.h"

namespace sandprobe::drivers {

using config::internal::At;

namespace {

// argv of `<path>:`: a non-empty list of strings with "{script}" as exactly one whole element,
// or none with stdin: true.
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

// `<path>.<key>`: absent (false) or a YAML boolean.
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

std::vector<std::string> Strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const YAML::Node& a : list) out.push_back(a.Scalar());
  return out;
}

}  // namespace

CommandConfig LocalConfig() {
  CommandConfig config;
  config.argv = {"python3", "-I", "-S", "-u", "-c", "{script}"};
  config.pass_planted_fds = true;
  return config;
}

std::expected<CommandConfig, config::ConfigError> ReadLocalSection(const std::string& file,
                                                                   const YAML::Node& root) {
  CommandConfig config = LocalConfig();
  const YAML::Node section = root["local"];
  if (!section.IsDefined() || section.IsNull()) return config;
  if (!section.IsMap()) return std::unexpected(At(file, section, "local", "expected a mapping"));
  if (auto r = config::internal::OnlyKeys(file, section, "local", {"argv", "tty"}); !r)
    return std::unexpected(r.error());
  auto tty = CheckBool(file, section, "local", "tty");
  if (!tty) return std::unexpected(tty.error());
  config.tty = *tty;
  if (section["argv"].IsDefined()) {
    if (auto r = CheckArgv(file, section, "local", false); !r) return std::unexpected(r.error());
    config.argv = Strings(section["argv"]);
  }
  return config;
}

std::expected<CommandConfig, config::ConfigError> ReadCommandSection(const std::string& file,
                                                                     const YAML::Node& root) {
  const YAML::Node section = root["command"];
  if (!section.IsDefined()) {
    return std::unexpected(At(file, root, "command", "driver command needs a command: section"));
  }
  if (!section.IsMap()) return std::unexpected(At(file, section, "command", "expected a mapping"));
  if (auto r = config::internal::OnlyKeys(
          file, section, "command", {"argv", "stdin", "tty", "preflight", "after", "cleanup"});
      !r) {
    return std::unexpected(r.error());
  }
  CommandConfig config;
  // Hook commands: lists of strings, never the script.
  for (auto [hook, out] : {std::pair{"preflight", &config.preflight},
                           {"after", &config.after},
                           {"cleanup", &config.cleanup}}) {
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
    *out = Strings(h);
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
  if (auto r = CheckArgv(file, section, "command", *stdin_mode); !r)
    return std::unexpected(r.error());
  config.argv = Strings(section["argv"]);
  config.stdin_mode = *stdin_mode;
  config.tty = *tty;
  return config;
}

}  // namespace sandprobe::drivers
