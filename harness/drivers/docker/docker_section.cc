#include "drivers/docker/docker_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "config/yaml_json.h"
#include "config/yaml_util.h"
#include "drivers/docker/docker_driver.h"
#include "drivers/docker/engine_client.h"
#include "drivers/docker/engine_schema.h"

namespace sandprobe::drivers {
namespace {

// An empty value (often a commented-out child) reads as null, which the daemon takes as "unset":
// no limit, the default. Leaving a field unset is said by omitting it.
constexpr char kEmptyMessage[] =
    "empty or null: the daemon reads it as unset (no limit, the default); give a value, or remove "
    "the line to leave it unset";

using config::ConfigError;
using config::internal::At;
using config::internal::Errors;
using Json = nlohmann::json;
using Result = std::expected<void, ConfigError>;

// The API version every DockerDriver request names: kDockerApi without its slash and "v".
constexpr std::string_view kDriverApi = std::string_view(kDockerApi).substr(2);

// Called for each named field met (not for list items or map values); an error skips the field's
// value.
using FieldVisitor =
    std::function<Result(const EngineField&, const YAML::Node& key, const std::string& field)>;

// "a list of strings", "an integer (bytes)": what a value of `f` is, for messages.
std::string Expected(const EngineObject& o, const EngineField& f) {
  switch (f.type) {
    case JsonType::kString:
      return "a string";
    case JsonType::kInteger:
      return f.unit.empty() ? "an integer" : fmt::format("an integer ({})", f.unit);
    case JsonType::kNumber:
      return "a number";
    case JsonType::kBoolean:
      return "true or false";
    case JsonType::kArray: {
      const EngineField* item = FindField(o, std::string(f.path) + "[]");
      if (item == nullptr || item->type == JsonType::kAny) return "a list";
      static constexpr std::string_view kPlural[] = {"strings", "integers", "numbers", "booleans",
                                                     "lists",   "mappings", "anything"};
      return fmt::format("a list of {}", kPlural[static_cast<int>(item->type)]);
    }
    case JsonType::kObject: {
      if (f.map) return "a mapping of keys to values";
      const auto keys = Properties(o, f.path);
      return keys.size() <= 6 ? fmt::format("a mapping with {}", fmt::join(keys, ", "))
                              : "a mapping";
    }
    case JsonType::kAny:
      break;
  }
  return "a value";
}

// Whether a wrong value may be a secret and must not be echoed: any value of an Env field
// (NAME=value pairs), or a string with a word secrets are kept under (the words of
// given_secrets.cc: TOKEN, KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL).
bool MayBeSecret(const std::string& field, const std::string& text) {
  if (field.ends_with(".Env") || field.find(".Env[") != std::string::npos) return true;
  std::string upper = text;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}) {
    if (upper.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string Actual(const YAML::Node& node, const Json& value, const std::string& field) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  if (value.is_null()) return "an empty value (null)";
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (MayBeSecret(field, text)) {
      return fmt::format("a string ({} characters, not shown: it may hold a secret)", text.size());
    }
    return fmt::format("the string \"{}\"", text);
  }
  return value.dump();
}

// docker run's --memory and --shm-size spelling (binary units: 256m = 256 MiB) -> bytes.
std::optional<uint64_t> DockerRunSize(const std::string& s) {
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == 0 || digits > 9) return std::nullopt;  // 999999999g still fits 64 bits
  std::string unit = s.substr(digits);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [name, shift] :
       {std::pair{"k", 10}, {"kb", 10}, {"m", 20}, {"mb", 20}, {"g", 30}, {"gb", 30}}) {
    if (unit == name) return std::stoull(s.substr(0, digits)) << shift;
  }
  return std::nullopt;
}

// A scalar (or null) `node` against the scalar type of `f`; one error at most.
Result CheckScalar(const std::string& file, const YAML::Node& node, const YAML::Node& at,
                   const EngineObject& o, const EngineField& f, const std::string& field) {
  const Json value = config::YamlToJson(node);
  if (value.is_null() && f.nullable) {
    return std::unexpected(config::internal::At(file, at, field, kEmptyMessage));
  }
  bool ok = false;
  switch (f.type) {
    case JsonType::kString:
      ok = value.is_string();
      break;
    case JsonType::kInteger:
      ok = value.is_number_integer();
      break;
    case JsonType::kNumber:
      ok = value.is_number();
      break;
    case JsonType::kBoolean:
      ok = value.is_boolean();
      break;
    default:
      ok = true;
  }
  if (ok) return {};
  std::string hint;
  if (f.type == JsonType::kString && (value.is_number() || value.is_boolean())) {
    hint = fmt::format("; quote it: \"{}\"", node.Scalar());
  } else if (f.unit == "bytes" && value.is_string()) {
    if (auto bytes = DockerRunSize(value.get<std::string>())) {
      hint = fmt::format("; docker run's {} is {}", value.get<std::string>(), *bytes);
    }
  }
  return std::unexpected(
      At(file, at, field,
         fmt::format("expected {}, not {}{}", Expected(o, f), Actual(node, value, field), hint)));
}

// `node` against `f`, every mistake below it added to `errors`. `key`: where an empty value (no
// mark of its own) is reported.
void CheckValue(const std::string& file, const YAML::Node& node, const YAML::Node& key,
                const EngineObject& o, const EngineField& f, const std::string& field,
                const FieldVisitor& visit, Errors& errors);

// The keys of the mapping `node`, the object at table path `parent` ("" = the root itself): each
// key and its value on its own.
void CheckObject(const std::string& file, const YAML::Node& node, const EngineObject& o,
                 std::string_view parent, bool map, const std::string& field,
                 const FieldVisitor& visit, Errors& errors) {
  const std::string prefix = parent.empty() ? "" : std::string(parent) + ".";
  if (map) {
    const EngineField* value = FindField(o, prefix + "*");
    for (const auto& kv : node) {
      if (value == nullptr) break;
      CheckValue(file, kv.second, kv.first, o, *value, field + "." + kv.first.Scalar(), visit,
                 errors);
    }
    return;
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string child = field + "." + key;
    const EngineField* f = FindField(o, prefix + key);
    if (f == nullptr) {
      const std::vector<std::string> known = Properties(o, parent);
      const std::string where =
          parent.empty() ? std::string(o.name) : fmt::format("{}.{}", o.name, parent);
      std::string message;
      if (parent.empty() && o.name == kHostConfig.name &&
          std::ranges::find(kConfigTaken, key) != std::end(kConfigTaken)) {
        message = fmt::format(
            "unknown field: {} is a ContainerConfig field, not HostConfig: write it under "
            "docker.config",
            key);
      } else if (const std::string near = config::internal::DidYouMean(key, known); !near.empty()) {
        message = fmt::format("unknown field; did you mean {}?", near);
      } else if (known.size() <= 8) {
        message = fmt::format("unknown field (expected one of: {})", fmt::join(known, ", "));
      } else {
        message = fmt::format("unknown field: {} has no such field in Engine API v{}..v{}", where,
                              kEngineSchemaOldest, kEngineSchemaNewest);
      }
      errors.Add(At(file, kv.first, child, message));
      continue;
    }
    if (!errors.Check(visit(*f, kv.first, child))) continue;
    CheckValue(file, kv.second, kv.first, o, *f, child, visit, errors);
  }
}

void CheckValue(const std::string& file, const YAML::Node& node, const YAML::Node& key,
                const EngineObject& o, const EngineField& f, const std::string& field,
                const FieldVisitor& visit, Errors& errors) {
  const YAML::Node& at = node.IsNull() && node.Scalar().empty() ? key : node;
  switch (f.type) {
    case JsonType::kAny:
      return;
    case JsonType::kObject:
      if (node.IsMap()) {
        CheckObject(file, node, o, f.path, f.map, field, visit, errors);
        return;
      }
      break;
    case JsonType::kArray:
      if (node.IsSequence()) {
        const EngineField* item = FindField(o, std::string(f.path) + "[]");
        for (size_t i = 0; item != nullptr && i < node.size(); ++i) {
          CheckValue(file, node[i], node[i], o, *item, fmt::format("{}[{}]", field, i), visit,
                     errors);
        }
        return;
      }
      break;
    default:
      if (!node.IsMap() && !node.IsSequence()) {
        errors.Check(CheckScalar(file, node, at, o, f, field));
        return;
      }
  }
  if (node.IsNull() && f.nullable) {
    // An empty value, often a commented-out child, reads as null: "unset" to the daemon (no
    // limit, the default), a hardening the file seems to set and does not. (yaml-cpp does not
    // tell an empty value from an explicit null, and omitting the field says "unset" plainly.)
    errors.Add(config::internal::At(file, at, field, kEmptyMessage));
    return;
  }
  const Json value = node.IsScalar() || node.IsNull() ? config::YamlToJson(node) : Json();
  std::string hint;
  if (f.type == JsonType::kArray && node.IsScalar() && value.is_string()) {
    const EngineField* item = FindField(o, std::string(f.path) + "[]");
    if (item != nullptr && item->type == JsonType::kString) {
      hint = MayBeSecret(field, node.Scalar()) ? "; write it as a list: [NAME=value]"
                                               : fmt::format("; write [{}]", node.Scalar());
    }
  }
  errors.Add(
      At(file, at, field,
         fmt::format("expected {}, not {}{}", Expected(o, f), Actual(node, value, field), hint)));
}

// A whole mapping of `o`'s fields at `field` (docker.hostConfig, docker.config), `visit` called
// on every named field, every mistake added to `errors`.
void WalkObject(const std::string& file, const YAML::Node& node, const EngineObject& o,
                const std::string& field, const FieldVisitor& visit, Errors& errors) {
  if (!node.IsMap()) {
    errors.Add(
        At(file, node, field, fmt::format("expected a mapping of Engine API {} fields", o.name)));
    return;
  }
  CheckObject(file, node, o, "", false, field, visit, errors);
}

void WalkHostConfig(const std::string& file, const YAML::Node& hc, const FieldVisitor& visit,
                    Errors& errors) {
  WalkObject(file, hc, kHostConfig, "docker.hostConfig", visit, errors);
}

// A string value (plain or quoted), or an error naming the field.
Result StringField(const std::string& file, const YAML::Node& section, const char* key,
                   bool required) {
  const YAML::Node node = section[key];
  const std::string field = std::string("docker.") + key;
  if (!node.IsDefined()) {
    if (!required) return {};
    return std::unexpected(At(file, section, field, config::internal::kMissing));
  }
  const Json value = node.IsScalar() ? config::YamlToJson(node) : Json();
  if (value.is_string() && !value.get<std::string>().empty()) return {};
  std::string hint;
  if (value.is_number() || value.is_boolean())
    hint = fmt::format("; quote it: \"{}\"", node.Scalar());
  return std::unexpected(
      At(file, node, field,
         fmt::format("expected a non-empty string, not {}{}", Actual(node, value, field), hint)));
}

// Every element on its own; the count of "{script}" only when every element is a string.
void CheckCmd(const std::string& file, const YAML::Node& cmd, Errors& errors) {
  if (!cmd.IsDefined()) return;
  if (!cmd.IsSequence() || cmd.size() == 0) {
    errors.Add(
        At(file, cmd, "docker.cmd", "expected a non-empty list of strings with \"{script}\""));
    return;
  }
  int script_slots = 0;
  const size_t before = errors.size();
  for (size_t i = 0; i < cmd.size(); ++i) {
    const std::string field = fmt::format("docker.cmd[{}]", i);
    if (!cmd[i].IsScalar() || !config::YamlToJson(cmd[i]).is_string()) {
      errors.Add(At(file, cmd[i], field,
                    cmd[i].IsScalar()
                        ? fmt::format("expected a string; quote it: \"{}\"", cmd[i].Scalar())
                        : std::string("expected a string")));
      continue;
    }
    // DockerDriver::CreateBody replaces whole "{script}" elements only.
    if (cmd[i].Scalar().find("{script}") != std::string::npos) {
      if (cmd[i].Scalar() != "{script}") {
        errors.Add(At(file, cmd[i], field, "{script} must be a whole argument of its own"));
        continue;
      }
      ++script_slots;
    }
  }
  if (errors.size() == before && script_slots != 1) {
    errors.Add(
        At(file, cmd, "docker.cmd",
           fmt::format("expected exactly one \"{{script}}\" argument (found {}): the probe program",
                       script_slots)));
  }
}

// docker.config: the ContainerConfig fields the driver sends with ContainerCreate (kConfigTaken,
// docker_section.h says why each), or why another field of the spec is not taken.
std::string ConfigFieldRefused(std::string_view key) {
  if (key == "Image") return "give the image as docker.image";
  if (key == "Cmd") return "give the command as docker.cmd (with \"{script}\")";
  if (key == "User") return "give the user as docker.user";
  if (key == "Tty" || key == "OpenStdin" || key == "StdinOnce" || key.starts_with("Attach")) {
    return "the driver attaches itself: no TTY, no stdin, stdout and stderr apart (a TTY merges "
           "them, and stderr is never evidence)";
  }
  if (key == "Volumes") return "anonymous volumes would outlive the container the driver removes";
  return "not taken by the docker driver: it changes nothing a probe measures here";
}

// A field the driver's own API version (kDockerApi) carries, else an error at its key.
Result InDriverApi(const std::string& file, const YAML::Node& key, const std::string& field,
                   const EngineField& f) {
  if (FieldInApi(f, kDriverApi)) return {};
  return std::unexpected(
      At(file, key, field,
         fmt::format("added in Engine API v{}; the docker driver sends v{} requests "
                     "(kDockerApi), where the daemon ignores or refuses it",
                     f.since, kDriverApi)));
}

void CheckConfig(const std::string& file, const YAML::Node& config, Errors& errors) {
  if (!config.IsDefined()) return;
  WalkObject(
      file, config, kContainerConfig, "docker.config",
      [&](const EngineField& f, const YAML::Node& key, const std::string& field) -> Result {
        if (f.path.find_first_of(".[") == std::string_view::npos &&
            std::ranges::find(kConfigTaken, f.path) == std::end(kConfigTaken)) {
          return std::unexpected(At(file, key, field, ConfigFieldRefused(f.path)));
        }
        return InDriverApi(file, key, field, f);
      },
      errors);
  if (!config.IsMap()) return;
  // What the spec's types do not say and the daemon refuses or misreads; only on values of the
  // right type (a wrong type is the walk's error already).
  const auto is_string = [](const YAML::Node& n) {
    return n.IsScalar() && config::YamlToJson(n).is_string();
  };
  if (const YAML::Node env = config["Env"]; env.IsDefined() && env.IsSequence()) {
    for (size_t i = 0; i < env.size(); ++i) {
      if (!is_string(env[i])) continue;
      const std::string& item = env[i].Scalar();
      if (item.find('=') == std::string::npos || item.starts_with("=")) {
        errors.Add(At(file, env[i], fmt::format("docker.config.Env[{}]", i),
                      "expected NAME=value (a bare NAME sets nothing through the Engine API; "
                      "docker run -e NAME copies the CLI's own variable)"));
      }
    }
  }
  if (const YAML::Node labels = config["Labels"]; labels.IsDefined() && labels.IsMap()) {
    for (const auto& kv : labels) {
      if (kv.first.Scalar().starts_with("sandprobe.")) {
        errors.Add(At(file, kv.first, "docker.config.Labels." + kv.first.Scalar(),
                      "sandprobe.* labels are the harness's own (the run id `sandprobe cleanup` "
                      "finds containers by)"));
      }
    }
  }
  if (const YAML::Node wd = config["WorkingDir"];
      wd.IsDefined() && is_string(wd) && !wd.Scalar().starts_with("/")) {
    errors.Add(At(file, wd, "docker.config.WorkingDir",
                  "expected an absolute path (the daemon refuses a relative one)"));
  }
}

// A ContainerConfig field written straight under docker: (docker.env, docker.Env): where it goes.
// Returns the keys it reported.
std::vector<std::string> ConfigFieldInSection(const std::string& file, const YAML::Node& section,
                                              Errors& errors) {
  std::vector<std::string> reported;
  for (const auto& kv : section) {
    const std::string key = kv.first.Scalar();
    for (const EngineField& f : kContainerConfigFields) {
      if (f.path.find_first_of(".[") != std::string_view::npos ||
          std::ranges::find(kConfigTaken, f.path) == std::end(kConfigTaken) ||
          !std::ranges::equal(key, f.path, [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) ==
                   std::tolower(static_cast<unsigned char>(b));
          })) {
        continue;
      }
      errors.Add(At(
          file, kv.first, "docker." + key,
          fmt::format("unknown field; {} is a ContainerConfig field: write it under docker.config "
                      "as {} (e.g. config: {{Env: [NAME=value]}})",
                      key, f.path)));
      reported.push_back(key);
      break;
    }
  }
  return reported;
}

}  // namespace

std::expected<void, ConfigError> CheckDockerSection(const std::string& file,
                                                    const YAML::Node& root) {
  const YAML::Node section = root["docker"];
  if (!section.IsDefined()) {
    return std::unexpected(
        At(file, root, "docker", "driver docker needs a docker: section (at least image:)"));
  }
  if (!section.IsMap()) return std::unexpected(At(file, section, "docker", "expected a mapping"));
  // Every key on its own from here: an unknown key does not hide a mistake in hostConfig.
  Errors errors;
  const std::vector<std::string> moved = ConfigFieldInSection(file, section, errors);
  config::internal::OnlyKeys(file, section, "docker",
                             {"image", "hostConfig", "config", "user", "cmd", "endpoint"}, errors,
                             moved);
  CheckConfig(file, section["config"], errors);
  errors.Check(StringField(file, section, "image", true));
  errors.Check(StringField(file, section, "user", false));
  CheckCmd(file, section["cmd"], errors);
  if (errors.Check(StringField(file, section, "endpoint", false))) {
    if (const YAML::Node e = section["endpoint"];
        e.IsDefined() && !e.Scalar().starts_with("unix://") && !e.Scalar().starts_with("tcp://")) {
      errors.Add(
          At(file, e, "docker.endpoint",
             "expected unix:///path/to/docker.sock or tcp://host:port (as DOCKER_HOST spells it)"));
    }
  }
  if (const YAML::Node hc = section["hostConfig"]; hc.IsDefined()) {
    WalkHostConfig(
        file, hc,
        [&](const EngineField& f, const YAML::Node& key, const std::string& field) -> Result {
          return InDriverApi(file, key, field, f);
        },
        errors);
  }
  if (!errors.empty()) return errors.Fail();
  return {};
}

std::expected<std::vector<ConfigError>, std::string> CompareWithDaemon(const std::string& file,
                                                                       const YAML::Node& root,
                                                                       const DaemonApi& daemon) {
  if (!ParseApiVersion(daemon.api_version)) {
    return std::unexpected(
        fmt::format("the Docker daemon at {} gave no ApiVersion in GET /version", daemon.endpoint));
  }
  if (ApiOlder(daemon.api_version, kDriverApi)) {
    return std::unexpected(fmt::format(
        "the Docker daemon at {} (Docker {}) speaks Engine API v{}, older than the v{} every "
        "docker driver request names: it would refuse each one (\"client version {} is too "
        "new\"); use Docker 20.10 or newer",
        daemon.endpoint, daemon.version, daemon.api_version, kDriverApi, kDriverApi));
  }
  if (ParseApiVersion(daemon.min_api_version) && ApiOlder(kDriverApi, daemon.min_api_version)) {
    return std::unexpected(fmt::format(
        "the Docker daemon at {} (Docker {}) takes Engine API v{} and newer only: it would refuse "
        "every v{} request of the docker driver (\"client version {} is too old\"); start it with "
        "DOCKER_MIN_API_VERSION={} or use an older daemon",
        daemon.endpoint, daemon.version, daemon.min_api_version, kDriverApi, kDriverApi,
        kDriverApi));
  }
  std::vector<ConfigError> warnings;
  const YAML::Node section = root["docker"];
  if (!section.IsMap() || !section["hostConfig"].IsDefined()) return warnings;
  const YAML::Node hc = section["hostConfig"];
  Errors errors;
  WalkHostConfig(
      file, hc,
      [&](const EngineField& f, const YAML::Node& key, const std::string& field) -> Result {
        if (FieldInApi(f, daemon.api_version)) return {};
        const std::string message =
            ApiOlder(daemon.api_version, f.since)
                ? fmt::format(
                      "added in Engine API v{}; the daemon at {} speaks v{} and "
                      "ignores it",
                      f.since, daemon.endpoint, daemon.api_version)
                : fmt::format(
                      "gone from the Engine API since v{}; the daemon at {} speaks v{} "
                      "and may ignore it, even in the driver's v{} requests (see the "
                      "API CHANGELOG)",
                      f.removed, daemon.endpoint, daemon.api_version, kDriverApi);
        warnings.push_back(At(file, key, field, message));
        return {};
      },
      errors);
  if (!errors.empty()) return std::unexpected(errors.First().ToString());
  return warnings;
}

std::expected<Json, ConfigError> ReadDockerSection(const std::string& file,
                                                   const YAML::Node& root) {
  if (auto r = CheckDockerSection(file, root); !r) return std::unexpected(r.error());
  return config::YamlToJson(root["docker"]);
}

std::expected<std::vector<std::string>, std::string> CheckDockerAgainstDaemon(
    const core::Manifest& manifest) {
  const Json* section = std::any_cast<Json>(&manifest.section);
  const std::string endpoint = section != nullptr && section->is_object() &&
                                       section->contains("endpoint") &&
                                       (*section)["endpoint"].is_string()
                                   ? (*section)["endpoint"].get<std::string>()
                                   : DefaultDockerEndpoint();
  const EngineClient client(endpoint);
  // Unversioned: every daemon answers /version, whatever API versions it takes.
  auto answer = client.Call("GET", "/version", "", 5);
  if (!answer || answer->status != 200) {
    return std::unexpected(fmt::format(
        "{}: --daemon: the Docker daemon at {} does not answer ({}); start one "
        "(ci/services/dockerd) or point DOCKER_HOST (or docker.endpoint) at a running daemon",
        manifest.source_path, endpoint,
        answer ? fmt::format("GET /version: HTTP {}", answer->status) : answer.error()));
  }
  const Json v = Json::parse(answer->body, nullptr, false);
  const DaemonApi daemon{
      .endpoint = endpoint,
      .version = v.is_object() ? v.value("Version", "?") : "?",
      .api_version = v.is_object() ? v.value("ApiVersion", "") : "",
      .min_api_version = v.is_object() ? v.value("MinAPIVersion", "") : "",
  };
  auto text = config::internal::ReadFile(manifest.source_path);
  if (!text) return std::unexpected(text.error().ToString());
  auto root = config::internal::ReadYaml(*text, manifest.source_path);
  if (!root) return std::unexpected(root.error().ToString());
  auto compared = CompareWithDaemon(manifest.source_path, *root, daemon);
  if (!compared)
    return std::unexpected(fmt::format("{}: {}", manifest.source_path, compared.error()));
  std::vector<std::string> lines;
  for (const ConfigError& w : *compared) lines.push_back(w.ToString());
  return lines;
}

}  // namespace sandprobe::drivers
