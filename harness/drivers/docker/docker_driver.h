// `docker` driver: deploys each probe invocation as a container through the Docker Engine API
// (API version 1.41, Docker 20.10+): create with the manifest's HostConfig passed through in the
// Engine API's own field names, start, wait under the harness deadline, read the logs, inspect,
// force-remove. It never pulls: a missing image is a setup error.
// Evidence it adds (Engine API ContainerInspect): State.OOMKilled, State.ExitCode,
// HostConfig.Runtime. Every container carries the labels sandprobe.run=<run id> and
// sandprobe.invocation; Cleanup() removes every container of the run.
//
// Manifest section:
//   docker:
//     image: sandprobe-probe:local      # required; must exist locally
//     hostConfig: {...}                 # Engine API HostConfig, verbatim
//     user: "65534:65534"               # optional
//     cmd: [python3, -I, -S, -u, -c, "{script}"]  # optional; {script} is the probe program
//     endpoint: unix:///var/run/docker.sock  # optional; default DOCKER_HOST or this
//     config: {Env: [...], WorkingDir: ..}  # optional Engine API ContainerConfig fields
//                                           # (docker_section.h kConfigTaken), merged into the
//                                           # create body; the harness's sandprobe.* labels win
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "drivers/docker/engine_client.h"
#include "drivers/driver.h"

namespace sandprobe::drivers {

class DockerDriver : public Driver {
 public:
  DockerDriver(nlohmann::json config, DriverContext context);
  std::string_view kind() const override { return "docker"; }
  std::expected<void, SetupError> Prepare() override;
  core::Observation Execute(const Invocation& inv, const std::atomic<bool>& cancel) override;
  void Cleanup() override;
  // IndependentSandboxes() stays false: a container's CPU cgroup has a weight of its own, so a
  // busy loop in it competes at full weight whatever its nice (RunOptions::deadline_workers).
  // config.Env entries with secret-looking names (given_secrets.h): the container gets them.
  std::vector<std::pair<std::string, std::string>> GivenSecrets() const override;
  std::string PreflightHint() const override {
    return "check the image and HostConfig by hand: docker run the image with python3 -c "
           "'print(1)'";
  }

  // The ContainerCreate body for one invocation (exposed for tests).
  nlohmann::json CreateBody(const Invocation& inv) const;

 private:
  // Force-removes a container; an error when the daemon did not confirm it (gone or failing).
  std::expected<void, std::string> Remove(const std::string& id);
  // ContainerInspect State.OOMKilled, or the daemon's `oom` event for a container that ended 137
  // by itself (oom_events.h: the flag misses a TaskOOM handled after the exit).
  bool OomKilled(const std::string& id, const nlohmann::json& state, bool stopped_by_harness,
                 double since_unix);

  nlohmann::json config_;
  DriverContext context_;
  EngineClient client_;
  std::mutex mu_;
  std::set<std::string> live_;  // containers created and not yet removed
};

inline constexpr char kDockerApi[] = "/v1.41";

}  // namespace sandprobe::drivers
