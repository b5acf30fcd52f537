// The `docker` kind: containers through the Docker Engine API (docker_driver.h). Its section is
// checked and read on load, hostConfig against the Engine API's own definitions (docker_section.h),
// and against the daemon on request (`sandprobe validate --daemon`). Its leftovers are containers
// labelled sandprobe.run, found on the local daemon (DOCKER_HOST or the default socket) without a
// manifest.
#include <fmt/format.h>

#include "drivers/docker/docker_driver.h"
#include "drivers/docker/docker_section.h"
#include "drivers/docker/engine_client.h"
#include "drivers/registry.h"

namespace sandprobe::drivers {
namespace {

// Containers of earlier runs (label sandprobe.run), unless that run is still alive. Source:
// Engine API ContainerList (all=1, label filter); removal: ContainerDelete force=1.
void SweepContainers(const SweepRequest& r, SweepTally& t) {
  const EngineClient docker(DefaultDockerEndpoint());
  auto ping = docker.Call("GET", "/_ping", "", 3);
  if (!ping || ping->status != 200) {
    r.say(fmt::format("docker: no daemon at {}, no containers to look at", docker.endpoint()));
    return;
  }
  const std::string filter = QueryEscape(
      r.only_run.empty() ? R"({"label":["sandprobe.run"]})"
                         : nlohmann::json::object(
                               {{"label", nlohmann::json::array({"sandprobe.run=" + r.only_run})}})
                               .dump());
  auto list = docker.Call(
      "GET", std::string(kDockerApi) + "/containers/json?all=1&filters=" + filter, "", 15);
  const nlohmann::json arr = list && list->status == 200
                                 ? nlohmann::json::parse(list->body, nullptr, false)
                                 : nlohmann::json::array();
  for (const auto& c : arr.is_array() ? arr : nlohmann::json::array()) {
    const std::string id = c.value("Id", "");
    const std::string run = c.value("/Labels/sandprobe.run"_json_pointer, std::string());
    if (id.empty()) continue;
    const std::string folder = c.value("/Labels/sandprobe.run-folder"_json_pointer, std::string());
    if (!run.empty() && r.run_alive(run, folder)) {
      r.say("container of a running sandprobe, left alone: " + id.substr(0, 12));
      ++t.spared;
      continue;
    }
    r.say(fmt::format("{} {} (run {})", r.dry_run ? "would remove container" : "removed container",
                      id.substr(0, 12), run));
    if (!r.dry_run) {
      docker.Call("DELETE", std::string(kDockerApi) + "/containers/" + id + "?force=1", "", 15);
    }
    ++t.removed;
  }
}

}  // namespace

DriverKind DockerKind() {
  DriverKind k;
  k.name = "docker";
  k.read_section = TypedReader(ReadDockerSection);
  k.check_live = CheckDockerAgainstDaemon;
  k.make = [](const core::Manifest& manifest,
              const DriverContext& context) -> std::expected<std::unique_ptr<Driver>, SetupError> {
    auto section = SectionOf<nlohmann::json>(manifest);
    if (!section) {
      return std::unexpected(SetupError{section.error(), "load the manifest from its file"});
    }
    if (!(*section)->contains("image") || !(**section)["image"].is_string()) {
      return std::unexpected(
          SetupError{fmt::format("manifest {}: docker.image is required", manifest.source_path),
                     "name a local image, e.g. sandprobe-probe:local (ci/images/probe-image)"});
    }
    return std::make_unique<DockerDriver>(**section, context);
  };
  k.sweep_leftovers = [](const SweepRequest& r, SweepTally& t) {
    if (r.manifest == nullptr) SweepContainers(r, t);
  };
  return k;
}

}  // namespace sandprobe::drivers
