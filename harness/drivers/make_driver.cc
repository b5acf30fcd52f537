// Driver factory: manifest -> driver. Drivers not built yet give a setup error that says so.
#include <fmt/format.h>

#include "drivers/command/command_driver.h"
#include "drivers/docker/docker_driver.h"
#include "drivers/driver.h"
#include "drivers/http/http_driver.h"
#include "drivers/kubernetes/kubernetes_driver.h"

namespace sandprobe::drivers {
namespace {

std::vector<std::string> Argv(const nlohmann::json& section, std::vector<std::string> fallback) {
  if (!section.is_object() || !section.contains("argv") || !section["argv"].is_array()) {
    return fallback;
  }
  std::vector<std::string> argv;
  for (const auto& a : section["argv"])
    argv.push_back(a.is_string() ? a.get<std::string>() : a.dump());
  return argv;
}

}  // namespace

std::expected<std::unique_ptr<Driver>, SetupError> MakeDriver(const core::Manifest& manifest,
                                                              const DriverContext& context) {
  if (manifest.driver == "local") {
    // The agent's own process: a plain child, no isolation at all (the control baseline).
    return std::make_unique<CommandDriver>(
        "local", Argv(manifest.driver_config, {"python3", "-u", "-c", "{script}"}), false, context);
  }
  if (manifest.driver == "command") {
    const nlohmann::json& section = manifest.driver_config;
    CommandConfig config;
    config.argv = Argv(section, {});
    config.stdin_mode = section.value("stdin", false);
    for (auto [key, out] : {std::pair{"preflight", &config.preflight},
                            {"after", &config.after},
                            {"cleanup", &config.cleanup}}) {
      if (section.contains(key) && section[key].is_array()) {
        for (const auto& a : section[key])
          out->push_back(a.is_string() ? a.get<std::string>() : a.dump());
      }
    }
    return std::make_unique<CommandDriver>("command", std::move(config), context);
  }
  if (manifest.driver == "docker") {
    if (!manifest.driver_config.contains("image") || !manifest.driver_config["image"].is_string()) {
      return std::unexpected(
          SetupError{fmt::format("manifest {}: docker.image is required", manifest.source_path),
                     "name a local image, e.g. sandprobe-probe:local (ci/images/probe-image)"});
    }
    return std::make_unique<DockerDriver>(manifest.driver_config, context);
  }
  if (manifest.driver == "kubernetes") return MakeKubernetesDriver(manifest, context);
  if (manifest.driver == "http") {
    auto config = ParseHttpConfig(manifest.driver_config);
    if (!config) {
      return std::unexpected(SetupError{
          fmt::format("manifest {}: {}", manifest.source_path, config.error()),
          "see the README section \"Testing a run-code service\" (manifests/http/minimal.yaml)"});
    }
    return std::make_unique<HttpDriver>(std::move(*config), context);
  }
  return std::unexpected(
      SetupError{fmt::format("driver '{}' (manifest {}) is not available in this build",
                             manifest.driver, manifest.source_path),
                 "use a local, command, docker, kubernetes or http manifest"});
}

}  // namespace sandprobe::drivers
